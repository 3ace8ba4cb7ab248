"""The robots.txt rules this process holds: an LRU of origins, each until it expires.

The cluster's copy is the record in Redis (``crawler.robots.records``);
this cache only spares a round trip per request, and lets the link filter
(``crawler.robots.linkfilter``) judge links without any I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.policy.robotsfetch import RobotsRecord
    from crawler.policy.robotsrules import RobotsRules

# Origins whose parsed rules this process keeps (the least recently used go first).
CACHE_SIZE = 4096


@dataclass(slots=True)
class RobotsEntry:
    """An origin's record, its rules parsed (None: no restriction applies), and
    whether this process has already warned that the origin is unreachable."""

    record: RobotsRecord
    rules: RobotsRules | None
    warned: bool = False


class RulesCache:
    """The parsed rules of the origins used last, each until its record expires."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[str, RobotsEntry] = OrderedDict()

    def get(self, origin: str, now: float) -> RobotsEntry | None:
        """*origin*'s entry if it is held and fresh at *now* (an expired one is
        dropped)."""
        entry = self._entries.get(origin)
        if entry is None or not entry.record.fresh(now):
            self._entries.pop(origin, None)
            return None
        self._entries.move_to_end(origin)
        return entry

    def put(self, origin: str, entry: RobotsEntry) -> None:
        self._entries[origin] = entry
        self._entries.move_to_end(origin)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
