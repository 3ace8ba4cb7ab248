"""A page's importance, I(P) = alpha * IB(P) + beta * IL(P), and where it ranks.

IB(P), the backlink importance, is a sum of *credits*: every page Q that links to P
passes P a share of its own importance when its links are queued, as OPIC passes
cash (Abiteboul et al., 2003), so a page linked from important pages gathers more
than one linked from many unimportant ones. Credits keep arriving while P waits in
the frontier, and each one can move P up its host's queue. IL(P), the location
importance, is a score of P's URL alone (``crawler.policy.urlimportance``). The
link-depth term of the formula is left out: breadth-first order covers depth.

How a link's credit is computed (``IMPORTANCE_BACKLINKS``):

- ``weighted`` (the default): ``0.7 ** depth(Q) * (1 + 0.85 * IB(Q) / N)`` for each
  of Q's N links, halved for a link to another host. The 1 is a floor per in-link,
  so that a page many pages link to rises even while they are unimportant
  themselves (what backlink count gets right early in a crawl); the share of Q's
  own backlink importance is what PageRank and OPIC get right later; the decay with
  Q's depth keeps a deep chain of pages with many in-links from outranking what is
  near a site's entry points (OPIC's cash decays per hop the same way). Links
  within a site count more than links across sites: navigation links are what make
  a site's sections and index pages important. And a site gathers a *host term*:
  ``HOST_SHARE`` of the credits of links from other hosts into any of its pages,
  fetched ones included, which ranks its best URL against other hosts' (the larger
  and better linked site first, as Baeza-Yates et al. found);
- ``count``: 1 per in-link (backlink count);
- ``opic``: Q's backlink importance split evenly over its links (OPIC's cash).

The rule and its constants were chosen on simulated webs (``bench/importancesim.py``,
bench/RESULTS.md), against bfs, backlink count, OPIC and the omniscient order.

The frontier keeps a queued URL's importance as a number and ranks it in *bands*:
``BANDS_PER_OCTAVE`` bands for each doubling, so a band is a step of 9%; within a
band, first queued goes first. Bands are the priority bands of
``crawler.policy.order`` (``FRONTIER_ORDER = importance`` ranks by band, then depth,
as ``priority`` ranks by Request.priority then depth), so the queues, leases and the
depth limit work alike in every order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crawler.policy.order import PRIORITY_BANDS

# How a link's credit is computed (IMPORTANCE_BACKLINKS).
BACKLINK_MODES = ("weighted", "count", "opic")
# The backlink importance a seed starts with (its credit: no page links to it).
SEED_CREDIT = 1.0
# Bands per doubling of importance: 2 ** (1 / 16) = a 4.4% step.
BANDS_PER_OCTAVE = 16
# The band of importance 1: bands cover 2**-32 .. 2**32.
BAND_OF_ONE = PRIORITY_BANDS // 2
# Added to a band's position before it is rounded down: log2 of a band's floor,
# 2**(k/16), may come out a hair under k/16, and the floor would rank a band lower
# (a URL ranked again from its band alone, as a lease put back, sank a band).
BAND_TOLERANCE = 1e-9
# weighted: the share of Q's backlink importance its links pass on,
DAMPING = 0.85
# the decay of a link's credit with the depth of the page that holds it,
DEPTH_DECAY = 0.7
# what a link to another host is worth against a link within the host,
EXTERNAL_WEIGHT = 0.5
# and the share of a link from another host that goes to the host's own term.
HOST_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class ImportanceConfig:
    """The formula's weights and how credits are computed (chosen on data:
    bench/RESULTS.md: IL is worth about five in-links)."""

    alpha: float = 1.0
    beta: float = 5.0
    backlinks: str = "weighted"

    def first(self, backlinks: float, location: float) -> float:
        """The importance a URL is queued with: its backlink importance so far
        (its first credit) and its URL's score."""
        return self.alpha * backlinks + self.beta * location

    def more(self, credit: float) -> float:
        """What one more in-link of *credit* adds to a queued URL's importance."""
        return self.alpha * credit


def check_config(alpha: float, beta: float, backlinks: object) -> ImportanceConfig:
    """The config, or ``ValueError`` with one line naming the bad setting."""
    for name, value in (("IMPORTANCE_ALPHA", alpha), ("IMPORTANCE_BETA", beta)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if alpha == 0 and beta == 0:
        raise ValueError("IMPORTANCE_ALPHA and IMPORTANCE_BETA cannot both be 0")
    if backlinks not in BACKLINK_MODES:
        raise ValueError(
            f"IMPORTANCE_BACKLINKS must be one of {', '.join(BACKLINK_MODES)}, "
            f"got {backlinks!r}"
        )
    return ImportanceConfig(alpha, beta, str(backlinks))


@dataclass(frozen=True, slots=True)
class LinkCredit:
    """What one link passes on: to the URL it points to, and to that URL's host's
    term (a link from another host, ``weighted`` only)."""

    url: float
    host: float = 0.0


def link_credit(
    mode: str, backlinks: float, depth: int, links: int, external: bool
) -> LinkCredit:
    """The credit of one of the *links* of a page of backlink importance
    *backlinks* at *depth*; *external* if it points to another host."""
    links = max(links, 1)
    backlinks = backlinks if backlinks > 0 else 0.0  # NaN and negatives: none
    if mode == "count":
        return LinkCredit(1.0)
    if mode == "opic":
        return LinkCredit(backlinks / links)
    credit = DEPTH_DECAY ** max(depth, 0) * (1 + DAMPING * backlinks / links)
    if not external:
        return LinkCredit(credit)
    credit *= EXTERNAL_WEIGHT
    return LinkCredit(credit, HOST_SHARE * credit)


def band_of(importance: float) -> int:
    """The band an importance ranks in: 0 for the most important, higher after."""
    if not importance > 0:  # zero, negative or NaN: last
        return PRIORITY_BANDS - 1
    if math.isinf(importance):
        return 0
    octaves = BANDS_PER_OCTAVE * math.log2(importance) + BAND_TOLERANCE
    return min(max(BAND_OF_ONE - math.floor(octaves), 0), PRIORITY_BANDS - 1)


def band_floor(band: int) -> float:
    """The lowest importance of *band* (what a URL is ranked with again when only
    its band is known: a lease that expired, a request held to be tried later)."""
    return float(2.0 ** ((BAND_OF_ONE - band) / BANDS_PER_OCTAVE))
