"""Fingerprints this node already sent to the frontier: repeated links cost no trip.

A link-heavy crawl sees each URL many times; Redis' seen filter answers for the
cluster, this bounded cache answers for the common case of a node seeing a link it
queued itself. It only ever says "seen" for fingerprints that were pushed to Redis,
so it never lets a new URL be lost.
"""

from __future__ import annotations


class SeenCache:
    """A bounded set that forgets its oldest entries first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[bytes, None] = {}

    def add(self, fingerprint: bytes) -> bool:
        """Add *fingerprint*; False if it was already there."""
        if fingerprint in self._entries:
            return False
        if self._size:
            if len(self._entries) >= self._size:
                del self._entries[next(iter(self._entries))]
            self._entries[fingerprint] = None
        return True

    def discard(self, fingerprint: bytes) -> None:
        """Forget *fingerprint*: it was not pushed after all (see the module doc)."""
        self._entries.pop(fingerprint, None)

    def __len__(self) -> int:
        return len(self._entries)
