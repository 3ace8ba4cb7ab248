"""Unit tests for crawler/frontier/dedup.py: Bloom filter sizing, hashing, settings."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.frontier.dedup import (
    BLOCK_BITS,
    ERROR_SHRINK,
    FIRST_SHARE,
    MAX_BITS,
    MAX_FILTERS,
    BloomLayout,
    DedupConfig,
    blocked_layout,
    blocked_positions,
    bloom_hashes,
    bloom_layout,
    bloom_positions,
    most_hashes,
    shard_layouts,
)
from tests.unit.properties import PROPERTY

LN2 = math.log(2)


def project_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def false_positive_rate(layout: BloomLayout) -> float:
    """The textbook rate of a filter holding its capacity: (1 - e^(-kn/m))^k."""
    fill = -layout.hashes * layout.capacity / layout.bits
    return (1 - math.exp(fill)) ** layout.hashes


@pytest.mark.parametrize(
    ("capacity", "error_rate"),
    [(1000, 0.01), (20_000, 1e-3), (156_250, 5e-7), (10**7, 1e-6), (1, 0.5)],
)
def test_layout_follows_the_textbook_formulas(capacity: int, error_rate: float) -> None:
    layout = bloom_layout(capacity, error_rate)
    ideal_bits = max(-capacity * math.log(error_rate) / LN2**2, 64)
    assert ideal_bits <= layout.bits < ideal_bits + 1
    assert abs(layout.hashes - layout.bits / capacity * LN2) <= 0.5
    assert layout.capacity == capacity


@pytest.mark.parametrize(
    ("capacity", "error_rate"),
    [(1000, 0.01), (20_000, 1e-3), (156_250, 5e-7), (10**6, 1e-9)],
)
def test_layout_meets_its_error_rate(capacity: int, error_rate: float) -> None:
    # Whole hash counts cost a fraction of a percent against the real-valued optimum.
    layout = bloom_layout(capacity, error_rate)
    assert false_positive_rate(layout) <= error_rate * 1.01


@pytest.mark.parametrize(
    ("capacity", "error_rate"), [(10**12, 1e-6), (2 * 10**9, 1e-3), (10**15, 0.5)]
)
def test_layout_is_capped_at_max_bits(capacity: int, error_rate: float) -> None:
    assert MAX_BITS == 2**32
    assert bloom_layout(capacity, error_rate).bits == MAX_BITS


@pytest.mark.parametrize(
    ("capacity", "error_rate", "shards"),
    [(1000, 1e-3, 64), (10_000, 1e-4, 16), (100, 0.01, 1), (10**7, 1e-6, 64)],
)
def test_filters_grow_from_a_small_extension_and_shrink_in_error(
    capacity: int, error_rate: float, shards: int
) -> None:
    layouts = shard_layouts(
        DedupConfig("bloom", capacity, error_rate), shards, blocked=False
    )
    assert 1 <= len(layouts) <= MAX_FILTERS
    base = shard_base(capacity, shards)
    for index, layout in enumerate(layouts):
        capacity = math.ceil(base * (1 if index == 0 else 2.0 ** (index - 4)))
        assert layout.capacity == capacity, index
        assert layout == bloom_layout(capacity, nth_error(error_rate, index))


def shard_base(capacity: int, shards: int) -> int:
    """A shard's share plus four standard deviations (dedup.py's docstring)."""
    share = capacity / shards
    return math.ceil(share + 4 * math.sqrt(share))


def nth_error(error_rate: float, index: int) -> float:
    return error_rate * FIRST_SHARE * ERROR_SHRINK**index


def test_no_shard_of_a_uniform_spread_outgrows_its_first_filter() -> None:
    """At capacity, the fullest of 64 shards still fits its first filter."""
    rng = random.Random(64)
    counts = [0] * 64
    for _ in range(200_000):
        counts[rng.randrange(64)] += 1
    first = shard_layouts(DedupConfig("bloom", 200_000, 1e-6), 64, blocked=False)[0]
    assert max(counts) <= first.capacity


@pytest.mark.parametrize(
    ("capacity", "error_rate", "shards"),
    # The last two reach MAX_BITS within MAX_FILTERS: the series stops before it.
    [
        (1000, 1e-3, 64),
        (2000, 1e-4, 16),
        (100, 0.01, 8),
        (10**5, 1e-6, 1024),
        (10**7, 1e-6, 64),
        (2 * 10**7, 1e-9, 1),
    ],
)
def test_all_filters_together_stay_within_the_error_rate(
    capacity: int, error_rate: float, shards: int
) -> None:
    layouts = shard_layouts(
        DedupConfig("bloom", capacity, error_rate), shards, blocked=False
    )
    assert all(layout.bits < MAX_BITS for layout in layouts)
    total = sum(false_positive_rate(layout) for layout in layouts)
    # Whole hash counts again: a percent of slack, far below a missing halving (x20).
    assert total <= error_rate * 1.01


def test_default_filters_together_stay_within_the_error_rate() -> None:
    settings = project_settings()
    config = DedupConfig.from_settings(settings)
    layouts = shard_layouts(config, settings.getint("FRONTIER_SHARDS"), blocked=False)
    assert sum(false_positive_rate(layout) for layout in layouts) <= config.error_rate


def test_default_series_grows_hundreds_of_times_the_capacity() -> None:
    settings = project_settings()
    config = DedupConfig.from_settings(settings)
    shards = settings.getint("FRONTIER_SHARDS")
    layouts = shard_layouts(config, shards, blocked=False)
    total = shards * sum(layout.capacity for layout in layouts)
    assert total >= 500 * config.capacity


@pytest.mark.parametrize(
    ("capacity", "error_rate", "shards"),
    [(10**7, 1e-6, 64), (10_000, 1e-4, 16), (2 * 10**7, 1e-9, 1), (10**5, 1e-6, 1024)],
)
def test_series_stops_before_the_first_capped_filter(
    capacity: int, error_rate: float, shards: int
) -> None:
    layouts = shard_layouts(
        DedupConfig("bloom", capacity, error_rate), shards, blocked=False
    )
    assert all(layout.bits < MAX_BITS for layout in layouts)
    if len(layouts) < MAX_FILTERS:
        index = len(layouts)
        base = shard_base(capacity, shards)
        following = bloom_layout(
            math.ceil(base * 2.0 ** (index - 4)), nth_error(error_rate, index)
        )
        assert following.bits == MAX_BITS


def test_series_keeps_one_filter_even_if_it_is_capped() -> None:
    layouts = shard_layouts(DedupConfig("bloom", 10**12, 1e-6), 1, blocked=False)
    assert layouts == [bloom_layout(shard_base(10**12, 1), nth_error(1e-6, 0))]
    assert layouts[0].bits == MAX_BITS


def test_default_first_filter_costs_at_most_four_bytes_a_url() -> None:
    settings = project_settings()
    config = DedupConfig.from_settings(settings)
    first = shard_layouts(config, settings.getint("FRONTIER_SHARDS"), blocked=False)[0]
    assert first.bits / 8 / first.capacity <= 4.0


def test_a_new_shard_blocks_its_first_filter_at_most_five_bytes_a_url() -> None:
    """Blocked, the first filter takes about a third more bits (39 a URL at the
    default 1e-6); the filters after it, at ever lower rates, stay plain."""
    settings = project_settings()
    config = DedupConfig.from_settings(settings)
    layouts = shard_layouts(config, settings.getint("FRONTIER_SHARDS"))
    first = layouts[0]
    assert first.block == BLOCK_BITS
    assert first.bits % BLOCK_BITS == 0
    assert first.bits / 8 / first.capacity <= 5.0
    assert all(layout.block == 0 for layout in layouts[1:])
    assert (
        layouts[1:]
        == shard_layouts(config, settings.getint("FRONTIER_SHARDS"), blocked=False)[1:]
    )


def test_a_rate_too_low_for_blocks_keeps_the_first_filter_plain() -> None:
    layouts = shard_layouts(DedupConfig("bloom", 10**6, 1e-10), 64)
    assert layouts[0].block == 0


@pytest.mark.parametrize(("error_rate", "seed"), [(1e-2, 1), (1e-3, 2)])
def test_a_blocked_filter_meets_its_error_rate(error_rate: float, seed: int) -> None:
    layout = blocked_layout(20_000, error_rate)
    bloom = SimulatedBlockedBloom(layout)
    positions = bloom.positions(b"x" * 20)
    assert len({p // BLOCK_BITS for p in positions}) == 1  # one block
    assert measured_false_positive_rate(bloom, seed) <= 1.5 * error_rate


def test_a_blocked_filter_sized_as_a_plain_one_misses_the_rate() -> None:
    """The control: blocks fill unevenly, so the plain filter's bits are not
    enough (the simulation tells the two apart)."""
    plain = bloom_layout(20_000, 1e-3)
    blocks = plain.bits // BLOCK_BITS
    layout = BloomLayout(blocks * BLOCK_BITS, plain.hashes, 20_000, BLOCK_BITS)
    bloom = SimulatedBlockedBloom(layout)
    assert measured_false_positive_rate(bloom, 2) > 1.5e-3


@PROPERTY
@given(fingerprint=st.binary(min_size=20, max_size=20), count=st.integers(1, 80))
def test_bloom_hashes_are_count_32_bit_words(fingerprint: bytes, count: int) -> None:
    hashes = bloom_hashes(fingerprint, count)
    assert len(hashes) == 4 * count
    assert bloom_hashes(fingerprint, count) == hashes  # deterministic
    assert bloom_hashes(fingerprint, count + 16)[: 4 * count] == hashes  # a prefix


def test_bloom_hashes_of_different_fingerprints_differ() -> None:
    assert bloom_hashes(bytes(20), 20) != bloom_hashes(b"\x01" + bytes(19), 20)


@pytest.mark.parametrize("blocked", [True, False])
def test_every_filter_of_a_shard_gets_enough_hashes(blocked: bool) -> None:
    """Blocked or plain (a shard made before blocked filters): a URL comes with
    enough hashes for either."""
    config = DedupConfig("bloom", 10_000_000, 1e-6)
    layouts = shard_layouts(config, 64, blocked=blocked)
    count = most_hashes(config, 64)
    assert all(layout.words <= count for layout in layouts)
    hashes = bloom_hashes(bytes(20), count)
    for layout in (layouts[0], layouts[-1]):
        if layout.block:
            positions = blocked_positions(hashes, layout)
        else:
            positions = bloom_positions(hashes, layout)
        assert len(positions) == layout.hashes
        assert all(0 <= position < layout.bits for position in positions)


def test_small_filters_meet_their_error_rate() -> None:
    """Per-shard filters are small early in a crawl: they must hold their rate too.

    (Double hashing, h1 + j * h2, measured 35 times its rate on such filters.)
    """
    layout = bloom_layout(384, 1e-6 * FIRST_SHARE)
    rng = random.Random(16)
    false_positives = probes = 0
    for _ in range(4):
        bloom = SimulatedBloom(layout)
        for _ in range(384):
            bloom.add(rng.randbytes(20))
        probes += 100_000
        false_positives += sum(rng.randbytes(20) in bloom for _ in range(100_000))
    # The textbook rate is 8.9e-7: 0.36 expected in 400,000 probes.
    assert false_positives <= 3


class SimulatedBloom:
    """The filter as dedup.py documents it (through ``bloom_positions``)."""

    def __init__(self, layout: BloomLayout) -> None:
        self.layout = layout
        self._bits = bytearray((layout.bits + 7) // 8)

    def positions(self, fingerprint: bytes) -> list[int]:
        return bloom_positions(
            bloom_hashes(fingerprint, self.layout.hashes), self.layout
        )

    def add(self, fingerprint: bytes) -> None:
        for position in self.positions(fingerprint):
            self._bits[position >> 3] |= 1 << (position & 7)

    def __contains__(self, fingerprint: bytes) -> bool:
        return all(
            self._bits[position >> 3] >> (position & 7) & 1
            for position in self.positions(fingerprint)
        )


class SimulatedBlockedBloom(SimulatedBloom):
    """A blocked filter as dedup.py documents it (``blocked_positions``)."""

    def positions(self, fingerprint: bytes) -> list[int]:
        hashes = bloom_hashes(fingerprint, self.layout.words)
        return blocked_positions(hashes, self.layout)


class SingleBitBloom(SimulatedBloom):
    """A broken scheme, for the control: every URL sets one bit (h2 ignored)."""

    def positions(self, fingerprint: bytes) -> list[int]:
        return bloom_positions(bloom_hashes(fingerprint, 1), self.layout)[:1]


def measured_false_positive_rate(bloom: SimulatedBloom, seed: int) -> float:
    """Insert 20_000 random fingerprints, then probe 20_000 fresh ones."""
    rng = random.Random(seed)
    inserted = {rng.randbytes(20) for _ in range(20_000)}
    for fingerprint in inserted:
        bloom.add(fingerprint)
    assert all(fingerprint in bloom for fingerprint in inserted)
    fresh = [rng.randbytes(20) for _ in range(20_000)]
    fresh = [fingerprint for fingerprint in fresh if fingerprint not in inserted]
    return sum(fingerprint in bloom for fingerprint in fresh) / len(fresh)


def test_simulated_filter_meets_its_error_rate() -> None:
    bloom = SimulatedBloom(bloom_layout(20_000, 1e-3))
    assert measured_false_positive_rate(bloom, seed=20_000) <= 3e-3


def test_simulation_detects_a_broken_hash_scheme() -> None:
    """The control: the same measurement fails a scheme that ignores h2."""
    bloom = SingleBitBloom(bloom_layout(20_000, 1e-3))
    assert measured_false_positive_rate(bloom, seed=20_000) > 3e-3


@pytest.mark.parametrize(
    ("mode", "capacity", "error_rate"),
    [("bloom", 10_000_000, 1e-6), ("exact", 1, 0.5), ("bloom", "100", "0.01")],
)
def test_dedup_config_from_settings(
    mode: str, capacity: int | str, error_rate: float | str
) -> None:
    config = DedupConfig.from_settings(
        project_settings(
            FRONTIER_DEDUP=mode,
            FRONTIER_DEDUP_CAPACITY=capacity,
            FRONTIER_DEDUP_ERROR_RATE=error_rate,
        )
    )
    assert config == DedupConfig(mode, int(capacity), float(error_rate))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FRONTIER_DEDUP", "cuckoo"),
        ("FRONTIER_DEDUP", ""),
        ("FRONTIER_DEDUP", "Bloom"),
        ("FRONTIER_DEDUP_CAPACITY", 0),
        ("FRONTIER_DEDUP_CAPACITY", -5),
        ("FRONTIER_DEDUP_ERROR_RATE", 0),
        ("FRONTIER_DEDUP_ERROR_RATE", 1),
        ("FRONTIER_DEDUP_ERROR_RATE", -0.1),
        ("FRONTIER_DEDUP_ERROR_RATE", "nan"),
    ],
)
def test_bad_dedup_setting_is_rejected_naming_it(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name) as info:
        DedupConfig.from_settings(project_settings(**{name: value}))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [("FRONTIER_DEDUP_CAPACITY", "lots"), ("FRONTIER_DEDUP_ERROR_RATE", "tiny")],
)
def test_non_number_dedup_setting_is_rejected_naming_it(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        DedupConfig.from_settings(project_settings(**{name: value}))
