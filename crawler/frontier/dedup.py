"""The seen-URL filter: which fingerprints the frontier has already accepted.

The check-and-add itself runs inside the push script (one atomic round trip); this
module decides what the script is given. ``bloom`` keeps a scalable Bloom filter per
shard on Redis bitmaps: filter *i* holds ``capacity * 2**i`` URLs at error rate
``error_rate / 2**(i + 1)``, so while a shard's URLs fit in its filters their union
stays within ``error_rate``. The series ends at ``MAX_FILTERS`` filters or before the
first that would need more than ``MAX_BITS`` bits, whichever comes first (with the
default settings: 10 filters, about 1000 times ``FRONTIER_DEDUP_CAPACITY``). Past the
last filter no filter is added: the last one keeps filling beyond its capacity, so its
error rate, and the union's, rises with every URL. Size ``FRONTIER_DEDUP_CAPACITY``
for the crawl. ``exact`` keeps every fingerprint in a set (about 70 bytes a URL).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DedupMode = Literal["bloom", "exact"]
# Most layouts written for a shard up front (fewer if MAX_BITS ends the series).
MAX_FILTERS = 20
# Redis strings are at most 512 MiB: no filter of the series is larger.
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
        """The config; raises ``ValueError`` with one line naming the bad setting."""
        mode = settings.get("FRONTIER_DEDUP")
        if mode not in ("bloom", "exact"):
            raise ValueError(f"FRONTIER_DEDUP must be 'bloom' or 'exact', got {mode!r}")
        capacity = get_int(settings, "FRONTIER_DEDUP_CAPACITY")
        if capacity < 1:
            raise ValueError(f"FRONTIER_DEDUP_CAPACITY must be >= 1, got {capacity!r}")
        error_rate = get_float(settings, "FRONTIER_DEDUP_ERROR_RATE")
        if not 0 < error_rate < 1:
            raise ValueError(
                f"FRONTIER_DEDUP_ERROR_RATE must be in (0, 1), got {error_rate!r}"
            )
        return cls(mode, capacity, error_rate)


def bloom_layout(capacity: int, error_rate: float) -> BloomLayout:
    """The optimal filter for *capacity* URLs at *error_rate* (capped at 2**32 bits).

    A capped filter does not meet *error_rate*; ``shard_layouts`` avoids them.
    """
    bits = min(max(_optimal_bits(capacity, error_rate), 64), MAX_BITS)
    hashes = max(1, round(bits / capacity * math.log(2)))
    return BloomLayout(bits, hashes, capacity)


def shard_layouts(config: DedupConfig, shards: int) -> list[BloomLayout]:
    """The growing series of filters of one shard (a shard sees 1/shards of URLs).

    Stops before the first filter that would be capped at ``MAX_BITS``, since a capped
    filter breaks the error-rate promise; the first filter is kept even if capped, as
    a shard needs one.
    """
    base = max(1, math.ceil(config.capacity / shards))
    layouts: list[BloomLayout] = []
    for index in range(MAX_FILTERS):
        capacity, error_rate = base * 2**index, config.error_rate / 2 ** (index + 1)
        if layouts and _optimal_bits(capacity, error_rate) > MAX_BITS:
            break
        layouts.append(bloom_layout(capacity, error_rate))
    return layouts


def _optimal_bits(capacity: int, error_rate: float) -> int:
    """Bits a filter of *capacity* URLs needs to meet *error_rate* (uncapped)."""
    return math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)


def bloom_hashes(fingerprint: bytes) -> tuple[int, int]:
    """Two 32-bit hashes of a fingerprint; filter bit j is ``(h1 + j * h2) % bits``.

    32 bits keep ``h1 + j * h2`` exact in Lua's doubles; *h2* is odd, so the
    positions of one URL never collapse onto one bit.
    """
    first = int.from_bytes(fingerprint[:4], "big")
    second = int.from_bytes(fingerprint[4:8], "big") | 1
    return first, second
