"""Fingerprints this node already sent to the frontier: repeated links cost no trip.

A link-heavy crawl sees each URL many times; Redis' seen filter answers for the
cluster, this bounded cache answers for the common case of a node seeing a link it
queued itself. It only ever says "seen" for fingerprints that were pushed to Redis,
so it never lets a new URL be lost; nor a shorter path to one: a URL seen again at a
shallower depth goes to Redis, which may queue it again there (depth repair).
The bfs spider keeps one too, keyed by URL, so that a repeated link costs no
request at all (crawler.spiders.bfs).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable


class SeenCache:
    """A bounded map key (a fingerprint, a URL) -> shallowest depth seen; forgets
    the oldest first."""

    def __init__(self, size: int) -> None:
        self._size = size
        # Oldest first. An OrderedDict, not a dict: taking a dict's first key
        # skips the slots of every key deleted before it, so a full cache's add
        # cost grew with the keys it had forgotten (issue 27: a seed backlog of a
        # million went from 6,700 to 3,500 URLs/s past the cache's 200,000).
        self._entries: OrderedDict[Hashable, int] = OrderedDict()

    def add(self, fingerprint: Hashable, depth: int = 0) -> bool:
        """Add *fingerprint* at *depth*; False if it was there at that depth or
        shallower."""
        known = self._entries.get(fingerprint)
        if known is not None:
            if known <= depth:
                return False
            self._entries[fingerprint] = depth
            return True
        if self._size:
            if len(self._entries) >= self._size:
                self._entries.popitem(last=False)
            self._entries[fingerprint] = depth
        return True

    def depth_of(self, key: Hashable) -> int | None:
        """The shallowest depth *key* was added at, or None if it is not here."""
        return self._entries.get(key)

    def discard(self, fingerprint: Hashable) -> None:
        """Forget *fingerprint*: it was not pushed after all (see the module doc)."""
        self._entries.pop(fingerprint, None)

    def __len__(self) -> int:
        return len(self._entries)
