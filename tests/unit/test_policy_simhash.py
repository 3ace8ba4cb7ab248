"""Unit tests for crawler/policy/simhash.py: a page's visible text, its SimHash,
the banded index and a host's budget rule for near-duplicates."""

from __future__ import annotations

import hashlib
import re
from collections import deque
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler import defaults
from crawler.policy.simhash import (
    NEAR_DUPLICATE_DISTANCE,
    NearDupConfig,
    bands,
    decode,
    encode,
    hamming,
    lowered_budget,
    near_duplicate_share,
    page_text,
    simhash,
)
from tests.unit.properties import PROPERTY

FINGERPRINTS = st.integers(min_value=0, max_value=2**64 - 1)
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/library")

ARTICLE = """
<p>The river rose through the night and by morning the lower streets of the town
were under water. Volunteers filled sandbags at the station while the council opened
the school hall to families who had to leave their homes.</p>
<p>Engineers said the old embankment held, but the new drainage channel overflowed
near the bridge. The forecast promises two dry days before more rain arrives from
the west at the end of the week, and the council asks residents to stay away from
the riverside paths until the water has gone down.</p>
<p>Shops in the market square stayed closed. The bakery handed out bread to the
volunteers, and the library offered its reading room to anyone who needed a warm
and quiet place to wait for news of their street.</p>
<p>At noon the mayor walked the length of the high street with the fire brigade.
She thanked the crews who had worked since midnight and promised that the repair of
the channel would be the first item at the next meeting of the council, ahead of the
budget for the new sports ground that had filled the agenda for months.</p>
<p>Farmers upstream reported fields lost under a brown lake and a few sheep carried
off by the current. A tractor pulled a stranded van out of the ford below the mill,
and its driver, a delivery man from the city, said he had trusted his navigation
system rather than the signs that warned him the road was closed.</p>
<p>The railway line to the coast reopened in the afternoon after inspectors checked
the culvert under the embankment. Buses replaced trains on the branch line, which
runs too close to the water to be safe, and the timetable for tomorrow will be
published this evening on the station notice board and on the company website.</p>
<p>Older residents compared the flood with the great storm of their childhood, when
the water reached the church steps and boats were rowed along the main road. This
time, they said, the warnings came early, and nobody was caught asleep in a ground
floor room as the water came in under the door.</p>
<p>Insurance assessors are expected on Monday. The council has set up a telephone
line for questions about damage and temporary housing, and a collection for the
families worst affected has already raised more than its first target, helped by
a concert the school choir gave in the hall last night.</p>
"""


def page(clock: str, advert: str) -> str:
    """A news page: the same article, a clock and an advert that change per fetch."""
    return (
        "<html><head><title>Flood news</title><style>p{color:red}</style></head>"
        f"<body><div class=clock>Updated {clock}</div>{ARTICLE}"
        f"<aside class=ad>{advert}</aside>"
        "<script>var now = Date.now(); track(now);</script></body></html>"
    )


# --- page_text ----------------------------------------------------------------------


def test_page_text_drops_what_a_reader_never_sees() -> None:
    html = (
        "<html><head><title>T</title><style>b{}</style></head><body><p>one"
        "<script>alert(1)</script></p><noscript>enable js</noscript>"
        "<template><p>later</p></template><p>two</p></body></html>"
    )
    assert page_text(html) == "one two"


def test_page_text_collapses_whitespace() -> None:
    assert page_text("<p>  a\n\n\tb  </p>   <div>c</div>") == "a b c"


def test_page_text_reads_bytes_as_utf8() -> None:
    assert page_text("<p>café über</p>".encode()) == "café über"


@pytest.mark.parametrize(
    "hostile",
    [
        b"",
        b"\x00\x00<p>a\x00b</p>",
        b"\xff\xfe\xfa junk",
        "<p>\ud800 lone</p>",
        "<<<>>>",
    ],
)
def test_page_text_never_raises_on_hostile_input(hostile: bytes | str) -> None:
    assert isinstance(page_text(hostile), str)


def test_page_text_cuts_a_page_where_it_nests_too_deep() -> None:
    """lexbor's cost is quadratic in nesting (50,000 <div> took seconds): the text
    beyond the limit is dropped, the text before it kept."""
    assert page_text("<p>before</p>" + "<div>" * 50_000 + "after") == "before"


# --- simhash ------------------------------------------------------------------------


def test_no_words_hash_to_zero() -> None:
    assert simhash("") == 0
    assert simhash("  \n ") == 0


def test_a_short_text_is_one_shingle_hashed_with_blake2b() -> None:
    """Fewer than three words: the fingerprint is that one shingle's hash, the
    majority of one vote, lowercased first."""
    expected = int.from_bytes(hashlib.blake2b(b"hello world", digest_size=8).digest())
    assert simhash("Hello  World") == expected


def _blake(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest())


def test_each_bit_is_the_majority_of_the_shingles_bits() -> None:
    """Five words are three shingles: a bit is set when two of three hashes set it."""
    first, second, third = _blake("a b c"), _blake("b c d"), _blake("c d e")
    majority = (first & second) | (first & third) | (second & third)
    assert simhash("a b c d e") == majority


def test_a_tie_leaves_the_bit_clear() -> None:
    """Two shingles: only the bits both hashes set win more than half the votes."""
    assert simhash("a b c d") == _blake("a b c") & _blake("b c d")


def test_case_and_spacing_do_not_change_the_fingerprint() -> None:
    assert simhash("The Quick brown fox jumps") == simhash(
        "the quick\nbrown  FOX jumps"
    )


@pytest.mark.parametrize("clock", ["09:14:03", "17:48:59", "23:59:01", "00:00:07"])
def test_a_page_with_a_ticking_clock_stays_near(clock: str) -> None:
    first = simhash(page_text(page("09:14:02", "Buy the new Phone X today")))
    later = simhash(page_text(page(clock, "Buy the new Phone X today")))
    assert first != later
    assert hamming(first, later) <= NEAR_DUPLICATE_DISTANCE


# A clock or an advert of 5 to 7 words moves a page of 400 to 2,500 words by 1 to 7
# bits: within the default distance (6), so neither is a change.
ADVERTS = [
    "Cheap flights to Lisbon now",
    "Save 20% on garden chairs",
    "Learn Spanish in ten minutes a day",
    "Your new car is waiting",
    "Win a cruise for two people",
]


def test_a_short_article_with_a_rotating_advert_stays_near() -> None:
    first = simhash(page_text(page("09:14:02", "Buy the new Phone X today")))
    later = simhash(page_text(page("09:14:02", "Save 20% on garden chairs")))
    assert hamming(first, later) <= NEAR_DUPLICATE_DISTANCE


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="no Python docs installed")
@pytest.mark.parametrize("advert", ADVERTS)
def test_a_long_page_with_a_clock_and_a_rotating_advert_stays_near(
    advert: str,
) -> None:
    """A page of documentation's length (about 2,500 words) with a clock above and
    an advert block below: each fetch's clock and advert differ."""
    heapq = (PYTHON_DOCS / "heapq.html").read_text(encoding="utf-8")

    def fetched(clock: str, shown: str) -> str:
        return heapq.replace(
            "<body>", f"<body><div>Updated {clock}</div><aside>{shown}</aside>", 1
        )

    first = simhash(page_text(fetched("09:14:02", "Buy the new Phone X today")))
    later = simhash(page_text(fetched("17:48:59", advert)))
    assert first != later
    assert hamming(first, later) <= NEAR_DUPLICATE_DISTANCE


def test_an_unrelated_page_is_far_away() -> None:
    flood = simhash(page_text(page("09:14:02", "Buy the new Phone X today")))
    recipe = simhash(
        page_text(
            "<p>Whisk two eggs with a cup of milk, fold in the flour and a pinch of"
            " salt, then rest the batter for half an hour before frying thin"
            " pancakes in a hot buttered pan, turning each once.</p>"
        )
    )
    assert hamming(flood, recipe) > 10


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="no Python docs installed")
def test_python_docs_one_word_apart_are_near_and_two_pages_are_far() -> None:
    heapq = (PYTHON_DOCS / "heapq.html").read_text(encoding="utf-8")
    edited = heapq.replace("binary trees", "binary forests", 1)
    assert page_text(edited).split() != page_text(heapq).split()
    assert len(set(page_text(edited).split()) ^ set(page_text(heapq).split())) <= 2
    original = simhash(page_text(heapq))
    assert hamming(original, simhash(page_text(edited))) <= NEAR_DUPLICATE_DISTANCE
    json_page = (PYTHON_DOCS / "json.html").read_text(encoding="utf-8")
    assert hamming(original, simhash(page_text(json_page))) > 10


@PROPERTY
@given(st.text(max_size=300))
def test_simhash_is_deterministic_and_64_bits(text: str) -> None:
    fingerprint = simhash(text)
    assert fingerprint == simhash(text)
    assert 0 <= fingerprint < 2**64


# --- hamming ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [(0, 0, 0), (0, 1, 1), (0b1010, 0b0101, 4), (0, 2**64 - 1, 64), (7, 6, 1)],
)
def test_hamming_counts_differing_bits(a: int, b: int, distance: int) -> None:
    assert hamming(a, b) == distance


@PROPERTY
@given(FINGERPRINTS, FINGERPRINTS, FINGERPRINTS)
def test_hamming_is_a_metric(a: int, b: int, c: int) -> None:
    assert hamming(a, b) == hamming(b, a)
    assert (hamming(a, b) == 0) == (a == b)
    assert hamming(a, c) <= hamming(a, b) + hamming(b, c)


# --- bands --------------------------------------------------------------------------


def test_bands_cut_the_bits_into_distance_plus_one_keys() -> None:
    assert bands(0x0123456789ABCDEF, 3) == ["b0:cdef", "b1:89ab", "b2:4567", "b3:0123"]


def test_uneven_bands_take_the_remainder_first() -> None:
    """64 bits in 5 bands: 13, 13, 13, 13 and 12 bits."""
    assert bands(2**64 - 1, 4) == ["b0:1fff", "b1:1fff", "b2:1fff", "b3:1fff", "b4:fff"]


def test_distance_zero_is_one_band_the_whole_fingerprint() -> None:
    assert bands(0xABC, 0) == ["b0:0000000000000abc"]


@pytest.mark.parametrize(
    ("fingerprint", "distance"), [(0, -1), (0, 64), (-1, 3), (2**64, 3)]
)
def test_bands_refuse_what_they_cannot_index(fingerprint: int, distance: int) -> None:
    with pytest.raises(ValueError, match=r"must be|64 bits"):
        bands(fingerprint, distance)


@st.composite
def within_distance(draw: st.DrawFn) -> tuple[int, int, int]:
    """A fingerprint, one at most *distance* bits from it, and the distance."""
    distance = draw(st.integers(min_value=0, max_value=12))
    fingerprint = draw(FINGERPRINTS)
    flips = draw(st.sets(st.integers(0, 63), max_size=distance))
    other = fingerprint
    for bit in flips:
        other ^= 1 << bit
    return fingerprint, other, distance


@PROPERTY
@given(within_distance())
def test_fingerprints_within_the_distance_always_share_a_band(
    case: tuple[int, int, int],
) -> None:
    fingerprint, other, distance = case
    assert set(bands(fingerprint, distance)) & set(bands(other, distance))


def test_fingerprints_one_bit_too_far_may_share_no_band() -> None:
    """The control: with one flipped bit in each of the 4 bands, none is shared."""
    other = 0
    for bit in (0, 16, 32, 48):
        other ^= 1 << bit
    assert not set(bands(0, 3)) & set(bands(other, 3))


# --- encode and decode --------------------------------------------------------------


def test_encode_is_sixteen_lowercase_hex_digits() -> None:
    assert encode(0xABC) == "0000000000000abc"
    assert encode(2**64 - 1) == "ffffffffffffffff"


@PROPERTY
@given(FINGERPRINTS)
def test_decode_undoes_encode(fingerprint: int) -> None:
    assert decode(encode(fingerprint)) == fingerprint


def test_decode_takes_upper_case_digits() -> None:
    assert decode("00000000000000AB") == 0xAB


@pytest.mark.parametrize(
    "text",
    ["", "abc", "0x00000000000000a", "0000000000000000\n", " 000000000000000",
     "00000000_0000000", "000000000000000g", "00000000000000000", "\u0660" * 16],
)  # fmt: skip
def test_decode_refuses_anything_but_sixteen_hex_digits(text: str) -> None:
    with pytest.raises(ValueError, match="16 hex digits"):
        decode(text)


@PROPERTY
@given(st.text(max_size=20))
def test_decode_refuses_every_non_hex_text(text: str) -> None:
    is_hex = len(text) == 16 and all(c in "0123456789abcdefABCDEF" for c in text)
    if is_hex:
        assert decode(text) == int(text, 16)
    else:
        with pytest.raises(ValueError, match="16 hex digits"):
            decode(text)


@pytest.mark.parametrize("fingerprint", [-1, 2**64])
def test_encode_refuses_what_is_not_64_bits(fingerprint: int) -> None:
    with pytest.raises(ValueError, match="64 bits"):
        encode(fingerprint)


# --- a host's share of near-duplicates ----------------------------------------------


def test_near_duplicate_share() -> None:
    assert near_duplicate_share([]) == 0.0
    assert near_duplicate_share([True, False, False, True]) == 0.5


CONFIG = NearDupConfig(max_distance=3, host_window=50, host_share=0.8)


def test_a_host_of_near_duplicates_gets_a_lowered_budget() -> None:
    assert lowered_budget([True] * 16 + [False] * 4, CONFIG)


def test_too_few_pages_never_lower_the_budget() -> None:
    assert not lowered_budget([True] * 19, CONFIG)


def test_a_share_below_the_threshold_keeps_the_budget() -> None:
    assert not lowered_budget([True] * 15 + [False] * 5, CONFIG)


def test_only_the_window_counts() -> None:
    """Old distinct pages fall out of the window: the last 50 are 40 duplicates."""
    recent = [False] * 100 + [False] * 10 + [True] * 40
    assert lowered_budget(recent, CONFIG)
    assert not lowered_budget([False] * 11 + [True] * 40, NearDupConfig(3, 51, 0.8))


def test_a_deque_of_recent_pages_is_read_like_a_list() -> None:
    recent = deque([False] * 70 + [True] * 30, maxlen=100)
    assert not lowered_budget(recent, CONFIG)
    recent.extend([True] * 10)
    assert lowered_budget(recent, CONFIG)


def test_a_window_smaller_than_twenty_pages_is_full_when_full() -> None:
    assert lowered_budget([True] * 10, NearDupConfig(3, 10, 0.8))
    assert not lowered_budget([True] * 9, NearDupConfig(3, 10, 0.8))


def test_distance_zero_turns_the_rule_off() -> None:
    assert not lowered_budget([True] * 50, NearDupConfig(0, 50, 0.8))


# --- settings -----------------------------------------------------------------------


def test_the_defaults_are_the_documented_ones() -> None:
    assert NearDupConfig.from_settings(vars(defaults)) == NearDupConfig(
        6, 50, 0.8, copy_links=False, rule_support=2
    )
    assert defaults.NEARDUP_MAX_DISTANCE == NEAR_DUPLICATE_DISTANCE == 6


def test_settings_given_as_text_are_read() -> None:
    settings = {
        "NEARDUP_MAX_DISTANCE": "5",
        "NEARDUP_HOST_WINDOW": "30",
        "NEARDUP_HOST_SHARE": "0.5",
        "NEARDUP_COPY_LINKS": "true",
        "NEARDUP_RULE_SUPPORT": "3",
    }
    assert NearDupConfig.from_settings(settings) == NearDupConfig(5, 30, 0.5, True, 3)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("NEARDUP_MAX_DISTANCE", -1, "NEARDUP_MAX_DISTANCE must be in [0, 63], got -1"),
        ("NEARDUP_MAX_DISTANCE", 64, "NEARDUP_MAX_DISTANCE must be in [0, 63], got 64"),
        ("NEARDUP_MAX_DISTANCE", "3.5", "NEARDUP_MAX_DISTANCE must be an integer"),
        ("NEARDUP_HOST_WINDOW", 0, "NEARDUP_HOST_WINDOW must be >= 1 pages, got 0"),
        ("NEARDUP_HOST_SHARE", 0, "NEARDUP_HOST_SHARE must be in (0, 1], got 0.0"),
        ("NEARDUP_HOST_SHARE", 1.5, "NEARDUP_HOST_SHARE must be in (0, 1], got 1.5"),
        ("NEARDUP_HOST_SHARE", "most", "NEARDUP_HOST_SHARE must be a number"),
        ("NEARDUP_COPY_LINKS", 2, "NEARDUP_COPY_LINKS must be true or false"),
        ("NEARDUP_RULE_SUPPORT", -1, "NEARDUP_RULE_SUPPORT must be >= 0 pages, got -1"),
    ],
)
def test_a_bad_setting_is_named_in_one_line(
    name: str, value: object, message: str
) -> None:
    settings = {**vars(defaults), name: value}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        NearDupConfig.from_settings(settings)
