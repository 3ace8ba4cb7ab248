"""Near-duplicate pages by SimHash (``NEARDUP_*``): a page's visible text, its 64-bit
fingerprint, the Hamming distance between two, the banded index that finds the
fingerprints within a distance without comparing every pair, and a host's budget
lowered when most of its recent pages are near-duplicates (calendars, session URLs,
sort orders: many URLs, one page).

Charikar's SimHash of the text's word 3-grams: each shingle hashed to 64 bits, each
bit of the fingerprint the majority vote of that bit over the shingles. Changing a
word touches three shingles of many, so few votes turn and similar pages get
fingerprints a few bits apart, while unrelated pages differ in about 32 bits (Manku,
Jain and Das Sarma, "Detecting near-duplicates for web crawling": 64 bits, distance
3). Hashes are blake2b, never Python's ``hash()``: that one is salted per process,
and a fingerprint is compared across nodes and crawls. Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.htmlparse import parse_html
from crawler.policy.typedsettings import get_bool, get_float, get_int

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.policy.typedsettings import SupportsGet

BITS = 64
_MASK = (1 << BITS) - 1
# Two pages this many bits apart or closer are near-duplicates: Manku et al.'s
# choice for 64-bit fingerprints of 8 billion pages (precision and recall near 0.75).
NEAR_DUPLICATE_DISTANCE = 6
# Words a shingle: a changed word then turns only three shingles of the page.
SHINGLE_WORDS = 3
# Elements whose text a reader never sees (as crawler/render/sampler.py reads pages).
HIDDEN = ("script", "style", "noscript", "template")
# The fewest recent pages of a host before its share of near-duplicates means
# anything (a host's first pages are often its most alike: home, about, contact).
MIN_HOST_PAGES = 20
# A 64-bit big-endian word whose lowest bit alone is set.
_LOWEST_BIT = bytes(BITS // 8 - 1) + b"\x01"
_HEX = re.compile(r"[0-9a-fA-F]{16}")


@dataclass(frozen=True, slots=True)
class NearDupConfig:
    """The ``NEARDUP_*`` settings, checked once at start-up."""

    max_distance: int = NEAR_DUPLICATE_DISTANCE
    host_window: int = 50
    host_share: float = 0.8
    copy_links: bool = False
    rule_support: int = 2

    @property
    def enabled(self) -> bool:
        """Whether near-duplicates are looked for at all (distance 0: off)."""
        return self.max_distance > 0

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> NearDupConfig:
        """The settings; a one-line ``ValueError`` naming the first bad one. The
        distance stops at 63: the index needs a band of at least one bit for each
        of its distance + 1 bands."""
        return cls(
            get_int(settings, "NEARDUP_MAX_DISTANCE", at_least=0, at_most=BITS - 1),
            get_int(settings, "NEARDUP_HOST_WINDOW", at_least=1, note="pages"),
            get_float(settings, "NEARDUP_HOST_SHARE", above=0, at_most=1),
            get_bool(settings, "NEARDUP_COPY_LINKS"),
            get_int(settings, "NEARDUP_RULE_SUPPORT", at_least=0, note="pages"),
        )


def page_text(html: bytes | str) -> str:
    """The text a reader sees in *html*'s body: script, style, noscript and template
    dropped, whitespace collapsed to single spaces. Bytes are read as UTF-8 (give
    the response's text when its encoding is another). Hostile input (NULs, lone
    surrogates, junk, 50,000 nested elements) gives whatever text
    ``parse_html`` keeps, or "", never an error or a stall."""
    text = html.decode("utf-8", "replace") if isinstance(html, bytes) else html
    tree = parse_html(text)
    tree.strip_tags(list(HIDDEN))
    body = tree.body
    return " ".join(body.text(separator=" ").split()) if body is not None else ""


def simhash(text: str) -> int:
    """The 64-bit SimHash of *text*'s lowercased word 3-grams (a text of fewer words
    is one shingle; no words at all is 0). Each bit is set when more than half of
    the shingles' hashes have it set (a shingle seen twice votes twice)."""
    hashes = [_shingle_hash(shingle) for shingle in _shingles(text)]
    if not hashes:
        return 0
    # Every hash side by side in one integer: the bit i of all of them is then
    # counted with one shift, one mask and one popcount, not a loop per shingle.
    packed = int.from_bytes(b"".join(hashes), "big")
    ones = int.from_bytes(_LOWEST_BIT * len(hashes), "big")
    fingerprint = 0
    for bit in range(BITS):
        if 2 * ((packed >> bit) & ones).bit_count() > len(hashes):
            fingerprint |= 1 << bit
    return fingerprint


def _shingles(text: str) -> list[str]:
    """*text*'s lowercased runs of ``SHINGLE_WORDS`` words, one per word position."""
    words = text.lower().split()
    if len(words) <= SHINGLE_WORDS:
        return [" ".join(words)] if words else []
    return [
        " ".join(words[start : start + SHINGLE_WORDS])
        for start in range(len(words) - SHINGLE_WORDS + 1)
    ]


def _shingle_hash(shingle: str) -> bytes:
    """A stable 8-byte hash of *shingle*, the same in every process and release."""
    data = shingle.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=BITS // 8).digest()


def hamming(a: int, b: int) -> int:
    """Bits in which two fingerprints (0 <= fp < 2**64) differ."""
    return (a ^ b).bit_count()


def bands(fingerprint: int, distance: int) -> list[str]:
    """The keys of *fingerprint* in a banded index for *distance*: its 64 bits cut
    into distance + 1 bands, band *i* keyed ``"b<i>:<its bits in hex>"``.

    Two fingerprints at most *distance* bits apart share at least one key, by the
    pigeonhole principle: their differing bits fall in at most *distance* of the
    distance + 1 bands, so one band is identical. Looking a page up by its keys
    therefore finds every near-duplicate (and some that are not, which
    ``hamming`` then tells apart). ``ValueError`` for a distance outside [0, 63]
    or a fingerprint outside 64 bits.
    """
    _check_fingerprint(fingerprint)
    if not 0 <= distance < BITS:
        raise ValueError(f"distance must be in [0, {BITS - 1}], got {distance!r}")
    count = distance + 1
    keys, start = [], 0
    for index in range(count):
        width = BITS // count + (1 if index < BITS % count else 0)
        value = (fingerprint >> start) & ((1 << width) - 1)
        keys.append(f"b{index}:{value:0{-(-width // 4)}x}")
        start += width
    return keys


def encode(fingerprint: int) -> str:
    """*fingerprint* as 16 lowercase hex digits (how it is stored and compared)."""
    _check_fingerprint(fingerprint)
    return f"{fingerprint:016x}"


def decode(text: str) -> int:
    """The fingerprint *text* encodes: exactly 16 hex digits, else ``ValueError``
    (``int(text, 16)`` alone would take "0x", "_", spaces or non-ASCII digits)."""
    if not isinstance(text, str) or not _HEX.fullmatch(text):
        raise ValueError(f"a fingerprint is 16 hex digits, got {text!r}")
    return int(text, 16)


def _check_fingerprint(fingerprint: int) -> None:
    if not 0 <= fingerprint <= _MASK:
        raise ValueError(f"a fingerprint has 64 bits, got {fingerprint!r}")


def near_duplicate_share(flags: Sequence[bool]) -> float:
    """The share of *flags* that are True (near-duplicates); 0.0 for none."""
    return sum(1 for flag in flags if flag) / len(flags) if flags else 0.0


def lowered_budget(recent: Sequence[bool], config: NearDupConfig) -> bool:
    """Whether a host's budget should be lowered: of its last ``host_window`` pages
    (*recent*, oldest first, True for a near-duplicate), at least
    ``MIN_HOST_PAGES`` (or the whole window, if smaller) are known and the share of
    near-duplicates reaches ``host_share``. Always False while detection is off."""
    if not config.enabled:
        return False
    # islice, not a slice: a deque (the natural window) takes no slices.
    skipped = max(len(recent) - config.host_window, 0)
    window = list(itertools.islice(recent, skipped, None))
    if len(window) < min(MIN_HOST_PAGES, config.host_window):
        return False
    return near_duplicate_share(window) >= config.host_share
