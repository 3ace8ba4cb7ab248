"""A page's importance, I(P) = alpha * IB(P) + beta * IL(P), and where it ranks.

IB(P), the backlink importance, is a sum of *credits*: every page Q that links to P
passes P a share of its own importance when its links are queued, as OPIC passes
cash (Abiteboul et al., 2003), so a page linked from important pages gathers more
than one linked from many unimportant ones. Credits keep arriving while P waits in
the frontier, and each one can move P up its host's queue. IL(P), the location
importance, is a score of P's URL alone (``crawler.policy.urlimportance``). The
link-depth term of the formula is left out: breadth-first order covers depth.

How a link's credit is computed (``IMPORTANCE_BACKLINKS``):

- ``weighted`` (the default): Q's importance, damped, split over its links, with
  links to other hosts weighted ``EXTERNAL_WEIGHT`` times a link within Q's own
  host (a link from another site is a vote; a site's navigation links to every page
  it has), plus a floor of ``BASE_CREDIT`` per in-link, so that a page many pages link
  to rises even while the pages that link to it are unimportant themselves;
- ``count``: 1 per in-link (backlink count);
- ``opic``: Q's importance split evenly over its links (OPIC's cash).

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
# The importance a seed starts with (its credit: no page links to it).
SEED_CREDIT = 1.0
# Bands per doubling of importance: 2 ** (1 / 8) = a 9% step.
BANDS_PER_OCTAVE = 8
# The band of importance 1: bands cover 2**-64 .. 2**64.
BAND_OF_ONE = PRIORITY_BANDS // 2
# The share of Q's importance its links pass on (PageRank's damping factor).
DAMPING = 0.85
# A link to another host counts this many times a link within the host.
EXTERNAL_WEIGHT = 4.0
# Every in-link passes at least this much, whoever links.
BASE_CREDIT = 0.01


@dataclass(frozen=True, slots=True)
class ImportanceConfig:
    """The formula's weights and how credits are computed."""

    alpha: float = 1.0
    beta: float = 0.1
    backlinks: str = "weighted"

    def first(self, credit: float, location: float) -> float:
        """The importance a URL is queued with: its first credit and its URL score."""
        return self.alpha * credit + self.beta * location

    def more(self, credit: float) -> float:
        """What one more in-link adds to a queued URL's importance."""
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


def link_credits(
    mode: str, importance: float, links: int, external: int
) -> tuple[float, float]:
    """The credit a page of *importance* passes with each of its *links* (of which
    *external* lead to other hosts): (per link within its host, per external link).
    """
    links = max(links, 1)
    if mode == "count":
        return 1.0, 1.0
    if mode == "opic":
        share = importance / links
        return share, share
    internal = links - min(external, links)
    weight = internal + EXTERNAL_WEIGHT * min(external, links)
    share = DAMPING * max(importance, 0.0) / weight
    return BASE_CREDIT + share, BASE_CREDIT + EXTERNAL_WEIGHT * share


def band_of(importance: float) -> int:
    """The band an importance ranks in: 0 for the most important, higher after."""
    if not importance > 0:  # zero, negative or NaN: last
        return PRIORITY_BANDS - 1
    if math.isinf(importance):
        return 0
    band = BAND_OF_ONE - math.floor(BANDS_PER_OCTAVE * math.log2(importance))
    return min(max(band, 0), PRIORITY_BANDS - 1)


def band_floor(band: int) -> float:
    """The lowest importance of *band* (what a URL is ranked with again when only
    its band is known: a lease that expired, a request held to be tried later)."""
    return float(2.0 ** ((BAND_OF_ONE - band) / BANDS_PER_OCTAVE))
