"""The seen-URL filter: which fingerprints the frontier has already accepted.

The check-and-add itself runs inside the push script (one atomic round trip); this
module decides what the script is given. ``bloom`` keeps a scalable Bloom filter per
shard on Redis bitmaps: filter *i* holds ``base * filter_scale(i)`` URLs (1, then
1/8, 1/4, 1/2, 1... times ``base``) at error rate
``0.89 * error_rate * 0.1**i``, so while a shard's URLs fit in its filters their union
stays within ``error_rate``, and the first filter, which holds most URLs, costs about
4.9 bytes a URL at the default 1e-6 (3.6 in a shard made before blocked filters).
``base`` is the shard's share of ``FRONTIER_DEDUP_CAPACITY`` plus four standard
deviations of a uniform spread, so that no shard outgrows its first filter while the
crawl stays within the capacity.
The series ends at ``MAX_FILTERS`` filters or before the first that would need more
than ``MAX_BITS`` bits; past the last filter no filter is added, the last one keeps
filling, and the error rate rises: size ``FRONTIER_DEDUP_CAPACITY`` for the crawl.
``exact`` keeps every fingerprint in a set (about 70 bytes a URL).

Bit *j* of a URL in a filter of *bits* bits is ``h_j % bits``, where ``h_j`` is the
j-th 32-bit word of a BLAKE2b hash of the URL's fingerprint: independent hashes, as
the textbook rate assumes. (Double hashing, ``h1 + j * h2``, measured 35 times the
rate on the small filters a shard starts with.)

A crawl's shards made since issue 27 keep *blocked* filters: a URL's bits all lie in
one block of ``BLOCK_BITS`` (a 64-byte cache line), block ``h_0 % blocks``, bit *j*
of it ``h_(j+1) % BLOCK_BITS``; the push script reads and writes the block with one
GETRANGE and one SETRANGE instead of a GETBIT and a SETBIT a hash (the filter was two
thirds of the script's time). Blocks fill unevenly, so a blocked filter needs about a
third more bits for the same rate (``blocked_bits_per_url``). A shard whose filter
was made before keeps its plain layout (``layout_fields``).
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, get_args

from crawler.policy.typedsettings import get_choice, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DedupMode = Literal["bloom", "exact"]
# Most layouts written for a shard up front (fewer if MAX_BITS ends the series).
MAX_FILTERS = 13
# Redis strings are at most 512 MiB: no filter of the series is larger.
MAX_BITS = 2**32
# Each filter added to a shard has a tenth of the error rate of the one before.
ERROR_SHRINK = 0.1
# The first filter's share of the error rate: 0.9 would make the series sum to
# exactly the rate; whole hash counts cost a fraction of a percent, hence 0.89.
FIRST_SHARE = 0.89
# Bits of a block of a blocked filter: a URL's bits all lie in one.
BLOCK_BITS = 512
# The lowest error rate a blocked first filter is made for; below it the first
# filter is plain too (a blocked one needs nearly twice the bits at 1e-9).
BLOCKED_MIN_RATE = 1e-9


@dataclass(frozen=True, slots=True)
class BloomLayout:
    """Size of one Bloom filter: bits, hash functions, and URLs it is made for; a
    blocked one's bits are whole blocks of ``block`` bits (0: a plain filter)."""

    bits: int
    hashes: int
    capacity: int
    block: int = 0

    @property
    def words(self) -> int:
        """The 32-bit hashes a URL needs in this filter (a blocked one's first
        picks the block)."""
        return self.hashes + (1 if self.block else 0)


@dataclass(frozen=True, slots=True)
class DedupConfig:
    mode: DedupMode
    capacity: int
    error_rate: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        """The config; raises ``ValueError`` with one line naming the bad setting."""
        return cls(
            mode=get_choice(settings, "FRONTIER_DEDUP", get_args(DedupMode)),
            capacity=get_int(settings, "FRONTIER_DEDUP_CAPACITY", at_least=1),
            error_rate=get_float(
                settings, "FRONTIER_DEDUP_ERROR_RATE", above=0, below=1
            ),
        )


def bloom_layout(capacity: int, error_rate: float) -> BloomLayout:
    """The optimal filter for *capacity* URLs at *error_rate* (capped at ``MAX_BITS``;
    a capped filter does not meet *error_rate*, and ``shard_layouts`` avoids them)."""
    bits = min(max(_optimal_bits(capacity, error_rate), 64), MAX_BITS)
    hashes = max(1, round(bits / capacity * math.log(2)))
    return BloomLayout(bits, hashes, capacity)


def blocked_layout(capacity: int, error_rate: float) -> BloomLayout:
    """The blocked filter for *capacity* URLs at *error_rate*: the fewest whole
    blocks that meet it, with the hash count that needs fewest (capped at
    ``MAX_BITS``; ``shard_layouts`` asks only for rates of ``BLOCKED_MIN_RATE`` or
    more: far below it no block meets the rate)."""
    per_url, hashes = blocked_bits_per_url(error_rate)
    blocks = max(math.ceil(capacity * per_url / BLOCK_BITS), 1)
    bits = min(blocks * BLOCK_BITS, MAX_BITS)
    return BloomLayout(bits, hashes, capacity, BLOCK_BITS)


@lru_cache(maxsize=64)
def blocked_bits_per_url(error_rate: float) -> tuple[float, int]:
    """Bits a URL and hash count of the smallest blocked filter at *error_rate*.

    Its rate, with ``u`` URLs a block on average (Poisson over blocks) and *k*
    hashes: the sum over ``i`` of ``P(i URLs in the block) * (1 - (1 - 1/B)^(k i))^k``
    (Putze, Sanders, Singler: "Cache-, Hash- and Space-Efficient Bloom Filters")."""
    plain = -math.log(error_rate) / math.log(2) ** 2
    best: tuple[float, int] | None = None
    for hashes in range(max(1, round(plain * math.log(2)) - 6), round(plain) + 2):
        low, high = plain, 4 * plain  # bits a URL: too few, enough
        if _blocked_rate(high, hashes) > error_rate:
            continue
        for _ in range(40):
            middle = (low + high) / 2
            low, high = (
                (low, middle)
                if _blocked_rate(middle, hashes) <= error_rate
                else (middle, high)
            )
        if best is None or high < best[0]:
            best = (high, hashes)
    if best is None:
        raise ValueError(f"no blocked filter meets an error rate of {error_rate}")
    return best


def _blocked_rate(bits_per_url: float, hashes: int) -> float:
    """The false positive rate of a blocked filter (``blocked_bits_per_url``)."""
    mean = BLOCK_BITS / bits_per_url  # URLs a block
    spread = 12 * math.sqrt(mean) + 20
    rate = 0.0
    for count in range(max(0, int(mean - spread)), int(mean + spread) + 1):
        share = math.exp(count * math.log(mean) - mean - math.lgamma(count + 1))
        rate += share * (1 - (1 - 1 / BLOCK_BITS) ** (hashes * count)) ** hashes
    return rate


@lru_cache(maxsize=16)
def shard_layouts(
    config: DedupConfig, shards: int, *, blocked: bool = True
) -> list[BloomLayout]:
    """The growing series of filters of one shard (a shard sees 1/shards of URLs).
    With *blocked* (shards made since issue 27) the first filter, which holds most
    URLs, is blocked; the rest, at ever lower rates, are plain (a blocked filter
    needs twice the bits of a plain one at 1e-9, and cannot meet 1e-15).

    Stops before the first filter that would be capped at ``MAX_BITS``, since a capped
    filter breaks the error-rate promise; the first filter is kept even if capped, as
    a shard needs one.
    """
    share = config.capacity / shards
    base = math.ceil(share + 4 * math.sqrt(share))
    layouts: list[BloomLayout] = []
    for index in range(MAX_FILTERS):
        capacity = math.ceil(base * filter_scale(index))
        error_rate = config.error_rate * FIRST_SHARE * ERROR_SHRINK**index
        if layouts and _optimal_bits(capacity, error_rate) > MAX_BITS:
            break
        if blocked and index == 0 and error_rate >= BLOCKED_MIN_RATE:
            layouts.append(blocked_layout(capacity, error_rate))
        else:
            layouts.append(bloom_layout(capacity, error_rate))
    return layouts


def layout_fields(config: DedupConfig, shards: int, *, blocked: bool) -> dict[str, int]:
    """The seen hash's layout fields of a shard: how many filters are in use, and
    each filter's bits, hashes, capacity (and block, if blocked)."""
    fields: dict[str, int] = {"filters": 1}
    for index, layout in enumerate(shard_layouts(config, shards, blocked=blocked)):
        fields |= {
            f"bits:{index}": layout.bits,
            f"hashes:{index}": layout.hashes,
            f"cap:{index}": layout.capacity,
        }
        if layout.block:
            fields[f"block:{index}"] = layout.block
    return fields


def filter_scale(index: int) -> float:
    """Capacity of filter *index* in units of the first: 1, then 1/8, 1/4, 1/2, 1, ...

    Hosts land on shards whole, so some shards outgrow their first filter by a little;
    a small first extension keeps that from costing a whole second filter.
    """
    return 1 if index == 0 else 2.0 ** (index - 4)


def _optimal_bits(capacity: int, error_rate: float) -> int:
    """Bits a filter of *capacity* URLs needs to meet *error_rate* (uncapped)."""
    return math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)


def bloom_hashes(fingerprint: bytes, count: int) -> bytes:
    """*count* independent 32-bit hashes of a fingerprint, big-endian, for the script."""
    words = b""
    for salt in range(math.ceil(count / 16)):
        words += hashlib.blake2b(fingerprint, salt=bytes([salt])).digest()
    return words[: 4 * count]


def bloom_positions(hashes: bytes, layout: BloomLayout) -> list[int]:
    """The bits of a URL in a filter, as the push script computes them."""
    words = struct.unpack(f">{len(hashes) // 4}I", hashes)
    return [word % layout.bits for word in words[: layout.hashes]]


def blocked_positions(hashes: bytes, layout: BloomLayout) -> list[int]:
    """The bits of a URL in a blocked filter, as the push script computes them."""
    words = struct.unpack(f">{len(hashes) // 4}I", hashes)
    start = words[0] % (layout.bits // layout.block) * layout.block
    return [start + word % layout.block for word in words[1 : layout.words]]


def most_hashes(config: DedupConfig, shards: int) -> int:
    """How many hashes a URL needs to be checked against every filter of a shard,
    blocked or plain."""
    layouts = [
        *shard_layouts(config, shards, blocked=True),
        *shard_layouts(config, shards, blocked=False),
    ]
    return max(layout.words for layout in layouts)
