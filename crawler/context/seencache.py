"""Links this process already sent to the frontier: repeated links cost no trip.

A link-heavy crawl sees each URL many times; Redis' seen filter answers for the
cluster, this bounded cache answers for the common case of a node seeing a link it
queued itself. One cache a crawl, shared by the bfs spider (keyed by the URLs it
yielded: a repeated link costs no request at all, crawler.spiders.bfs) and the
scheduler (by fingerprint, for requests no spider checked:
crawler.frontier.admission), sized by memory (``FRONTIER_LOCAL_SEEN_MB``).

It is compact (issue 27): 9 bytes a slot, a 64-bit tag and a depth, in buckets of
8 slots that each forget their oldest entry first. A key is known by its tag only,
so the cache says "seen" wrongly only when two keys share all 64 bits of Python's
keyed (SipHash) hash: about n / 2**64 a lookup with n entries, under 1e-12 at the
default size, a million times below the Redis Bloom filter's own error rate, which
decides for every link this cache passes. Forgetting, by contrast, only costs a
round trip: Redis still answers.

It only ever says "seen" for keys that were pushed to Redis, so it never lets a new
URL be lost; nor a shorter path to one: a URL seen again at a shallower depth goes to
Redis, which may queue it again there (depth repair). Depths past 255 are kept as
255, so a shorter path between two such depths is not tried again.
"""

from __future__ import annotations

import mmap
from typing import TYPE_CHECKING

from crawler import defaults
from crawler.policy.typedsettings import get_optional_float

if TYPE_CHECKING:
    from collections.abc import Hashable

    from scrapy.settings import BaseSettings

# Slots a bucket: a lookup reads one bucket; a full bucket forgets its oldest entry.
BUCKET = 8
# Bytes a slot: the 64-bit tag and a one-byte depth.
SLOT_BYTES = 9
# The deepest depth kept as such.
MAX_DEPTH = 255
_TAG_BITS = (1 << 64) - 1
# Python hashes b"x" as it hashes "x": a fingerprint's tag is set apart from a URL's.
_BYTES_SALT = 0x9E3779B97F4A7C15
# FRONTIER_LOCAL_SEEN_MB at most: 64 GiB, more than a node should give it.
MAX_MEGABYTES = 65_536


class SeenCache:
    """A bounded map key (a fingerprint, a URL) -> shallowest depth seen."""

    def __init__(self, capacity: int) -> None:
        """Room for *capacity* keys (0: a cache that remembers nothing). The pages
        of its tables are taken from the system as they are first written."""
        self._width = max(1, min(BUCKET, capacity))
        self._buckets = max(1, capacity // self._width) if capacity else 0
        slots = max(1, self._buckets * self._width)  # mmap wants a length
        # Anonymous maps: zeroed, and resident only where written.
        self._tag_map = mmap.mmap(-1, slots * 8)
        self._depth_map = mmap.mmap(-1, slots)
        self._tags = memoryview(self._tag_map).cast("Q")
        self._depths = memoryview(self._depth_map)
        self._size = 0

    @classmethod
    def sized(cls, megabytes: float) -> SeenCache:
        """A cache that takes at most *megabytes* of memory."""
        return cls(int(megabytes * 2**20) // SLOT_BYTES)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SeenCache:
        """The cache ``FRONTIER_LOCAL_SEEN_MB`` asks for, the project default when
        unset (a project without the add-on); a bad value raises ``ValueError``,
        naming the setting."""
        megabytes = get_optional_float(
            settings, "FRONTIER_LOCAL_SEEN_MB", at_least=0, at_most=MAX_MEGABYTES
        )
        if megabytes is None:
            megabytes = defaults.FRONTIER_LOCAL_SEEN_MB
        return cls.sized(megabytes)

    @property
    def capacity(self) -> int:
        return self._buckets * self._width

    def add(self, key: Hashable, depth: int = 0) -> bool:
        """Add *key* at *depth*; False if it was there at that depth or shallower."""
        if not self._buckets:
            return True
        tag, start = self._address(key)
        slot = self._find(tag, start)
        depth = min(depth, MAX_DEPTH)
        if slot >= 0:
            if self._depths[slot] <= depth:
                return False
            self._depths[slot] = depth
            return True
        self._insert(tag, depth, start)
        return True

    def depth_of(self, key: Hashable) -> int | None:
        """The shallowest depth *key* was added at, or None if it is not here."""
        if not self._buckets:
            return None
        slot = self._find(*self._address(key))
        return None if slot < 0 else self._depths[slot]

    def discard(self, key: Hashable) -> None:
        """Forget *key*: it was not pushed after all (see the module doc)."""
        if not self._buckets:
            return
        tag, start = self._address(key)
        slot = self._find(tag, start)
        if slot < 0:
            return
        end = start + self._width
        # Close the gap, keeping the bucket's entries oldest first.
        self._tags[slot : end - 1] = self._tags[slot + 1 : end]
        self._depths[slot : end - 1] = self._depths[slot + 1 : end]
        self._tags[end - 1] = 0
        self._size -= 1

    def __len__(self) -> int:
        return self._size

    def _address(self, key: Hashable) -> tuple[int, int]:
        """The key's tag (never 0: 0 marks a free slot) and its bucket's first slot."""
        salt = _BYTES_SALT if isinstance(key, bytes) else 0
        tag = ((hash(key) ^ salt) & _TAG_BITS) or 1
        return tag, (tag % self._buckets) * self._width

    def _find(self, tag: int, start: int) -> int:
        """The slot holding *tag* in the bucket at *start*, or -1."""
        entries = self._tags[start : start + self._width].tolist()
        return start + entries.index(tag) if tag in entries else -1

    def _insert(self, tag: int, depth: int, start: int) -> None:
        """Put *tag* in the bucket's first free slot, or forget its oldest entry."""
        end = start + self._width
        entries = self._tags[start:end].tolist()
        if 0 in entries:
            slot = start + entries.index(0)
            self._size += 1
        else:  # full: the oldest (first) goes, the rest move up
            self._tags[start : end - 1] = self._tags[start + 1 : end]
            self._depths[start : end - 1] = self._depths[start + 1 : end]
            slot = end - 1
        self._tags[slot] = tag
        self._depths[slot] = depth
