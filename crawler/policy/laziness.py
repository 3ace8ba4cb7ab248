"""Lazy pages and lazy sites (``REVISIT_CHANGE_THRESHOLD``, ``REVISIT_SITE_*``): the
settings, and a host's factor on its pages' revisit intervals.

A page's own history (``crawler.policy.changehistory``) takes many revisits to
tell a page that changes monthly from one that never does, while its host's other
pages have told the same thing many times over: a site's pages tend to change
alike (a news site, a documentation archive). ``site_interval_factor`` pools the
host's histories into one change rate and scales the host's intervals by it, within
[``REVISIT_SITE_MIN_FACTOR``, ``REVISIT_SITE_MAX_FACTOR``]. Whether a single revisit
was a change at all is ``changehistory.small_change``'s question. Pure: no clock,
no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.changehistory import CHANGE_THRESHOLD, History
from crawler.policy.simhash import BITS
from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from crawler.policy.typedsettings import SupportsGet

NEUTRAL = 1.0


@dataclass(frozen=True, slots=True)
class LazinessConfig:
    """The lazy page and lazy site settings, checked once at start-up."""

    change_threshold: int = CHANGE_THRESHOLD
    site_min_factor: float = 0.5
    site_max_factor: float = 4.0
    site_min_visits: int = 20

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> LazinessConfig:
        """The settings; a one-line ``ValueError`` naming the first bad one. The
        factors must keep 1.0 between them, so a host with too little evidence
        (factor 1.0) is never moved."""
        return cls(
            get_int(settings, "REVISIT_CHANGE_THRESHOLD", at_least=0, at_most=BITS),
            get_float(settings, "REVISIT_SITE_MIN_FACTOR", above=0, at_most=1),
            get_float(settings, "REVISIT_SITE_MAX_FACTOR", at_least=1),
            get_int(settings, "REVISIT_SITE_MIN_VISITS", at_least=1, note="revisits"),
        )


def site_interval_factor(
    pages: Sequence[tuple[float, float]], config: LazinessConfig
) -> float:
    """The factor on a host's revisit intervals, from its pages' (changes, visits):
    visits are revisits that told changed or not, changes those that found one.

    With n = Σ visits and X = Σ changes, the pooled rate is Cho and
    Garcia-Molina's estimate (``History.change_rate``, as for one page),
    r = -ln((n - X + 0.5) / (n + 0.5)), measured in changes per revisit interval
    rather than per second: the counts carry no seconds, and the interval is what
    the factor scales. The factor is 1 / r within [min, max]: the interval that
    then sees one change per revisit on average, the mean time between changes.
    Where few revisits find a change (r small) the interval grows, up to the
    maximum for a host whose pages never change; where most do, it shrinks. Cho's
    estimator rather than X / n, because X / n reads "changed at every revisit" as
    one change an interval and so would never shorten a host that changes faster.

    1.0 (neutral) with fewer than ``site_min_visits`` revisits in all: a host's
    first few revisits say too little to move every page of it. Counts that
    cannot be (negative, more changes than visits) are clamped, never raised.
    """
    visits = changes = 0.0
    for page_changes, page_visits in pages:
        counted = max(page_visits, 0)
        visits += counted
        changes += min(max(page_changes, 0), counted)
    if visits < config.site_min_visits:
        return NEUTRAL
    rate = History(visits, changes, visits).change_rate()
    if rate is None or rate <= 0:
        return config.site_max_factor
    return min(max(1 / rate, config.site_min_factor), config.site_max_factor)


def site_factors(
    hosts: Iterable[tuple[str, float, float]], config: LazinessConfig
) -> dict[str, float]:
    """Each host's factor from its pooled (host, changes, visits), as
    ``site_interval_factor``; only the hosts whose factor is not 1.0 (a host left
    out is neutral)."""
    factors = {}
    for host, changes, visits in hosts:
        factor = site_interval_factor([(changes, visits)], config)
        if factor != NEUTRAL:
            factors[host] = factor
    return factors
