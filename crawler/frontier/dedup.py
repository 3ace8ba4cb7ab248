"""The seen-URL filter: which fingerprints the frontier has already accepted.

The check-and-add itself runs inside the push script (one atomic round trip); this
module decides what the script is given. ``bloom`` keeps a scalable Bloom filter per
shard on Redis bitmaps: filter *i* holds ``capacity * 2**i`` URLs at error rate
``error_rate / 2**(i + 1)``, so the union never exceeds ``error_rate`` however far the
crawl grows. ``exact`` keeps every fingerprint in a set (about 70 bytes a URL).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DedupMode = Literal["bloom", "exact"]
# Layouts written for a shard up front; a crawl past 2**20 times its capacity stops
# adding filters and fills the last one (its error rate then rises).
MAX_FILTERS = 20
# Redis strings are at most 512 MiB.
MAX_BITS = 2**32


@dataclass(frozen=True, slots=True)
class BloomLayout:
    """Size of one Bloom filter: bits, hash functions, and URLs it is made for."""

    bits: int
    hashes: int
    capacity: int


@dataclass(frozen=True, slots=True)
class DedupConfig:
    mode: DedupMode
    capacity: int
    error_rate: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        mode = settings.get("FRONTIER_DEDUP")
        if mode not in ("bloom", "exact"):
            raise ValueError(f"FRONTIER_DEDUP must be 'bloom' or 'exact', got {mode!r}")
        capacity = settings.getint("FRONTIER_DEDUP_CAPACITY")
        if capacity < 1:
            raise ValueError(f"FRONTIER_DEDUP_CAPACITY must be >= 1, got {capacity!r}")
        error_rate = settings.getfloat("FRONTIER_DEDUP_ERROR_RATE")
        if not 0 < error_rate < 1:
            raise ValueError(
                f"FRONTIER_DEDUP_ERROR_RATE must be in (0, 1), got {error_rate!r}"
            )
        return cls(mode, capacity, error_rate)


def bloom_layout(capacity: int, error_rate: float) -> BloomLayout:
    """The optimal filter for *capacity* URLs at *error_rate* (capped at 2**32 bits)."""
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    bits = min(max(bits, 64), MAX_BITS)
    hashes = max(1, round(bits / capacity * math.log(2)))
    return BloomLayout(bits, hashes, capacity)


def shard_layouts(config: DedupConfig, shards: int) -> list[BloomLayout]:
    """The growing series of filters of one shard (a shard sees 1/shards of URLs)."""
    base = max(1, math.ceil(config.capacity / shards))
    return [
        bloom_layout(base * 2**index, config.error_rate / 2 ** (index + 1))
        for index in range(MAX_FILTERS)
    ]


def bloom_hashes(fingerprint: bytes) -> tuple[int, int]:
    """Two 32-bit hashes of a fingerprint; filter bit j is ``(h1 + j * h2) % bits``.

    32 bits keep ``h1 + j * h2`` exact in Lua's doubles; *h2* is odd, so the
    positions of one URL never collapse onto one bit.
    """
    first = int.from_bytes(fingerprint[:4], "big")
    second = int.from_bytes(fingerprint[4:8], "big") | 1
    return first, second
