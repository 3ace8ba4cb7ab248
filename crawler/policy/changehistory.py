"""A page's change history and its change rate: what revisits told about a page
(``History``: checks, changes, seconds covered, fading past ``WINDOW`` checks) and
Cho and Garcia-Molina's estimate of its Poisson change rate from that incomplete
history (a revisit only tells whether the page changed since the last one), with
the prior adaptive plans a page with no change seen yet with (``decision_rate``),
and whether a new body is a change at all (``small_change``: a text that moved by a
few SimHash bits is not). Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crawler.policy.simhash import hamming

# Checks a History remembers: beyond it all three statistics shrink in proportion,
# so each older check weighs WINDOW/(WINDOW+1) of the next and a rate that changed
# (a page that became static, a news page) is relearned in about WINDOW revisits,
# while the estimator keeps enough checks to tell 0.1 from 0.3 changes a visit.
WINDOW = 24.0
# Changes a page with none seen yet is planned with (see decision_rate).
PRIOR_CHANGES = 0.25
# SimHash bits a page's text may move by and still count as unchanged (see
# small_change; REVISIT_CHANGE_THRESHOLD's default).
CHANGE_THRESHOLD = 6


@dataclass(frozen=True, slots=True)
class History:
    """What a page's revisits told: checks (revisits that said changed or not),
    the changes among them and the seconds they covered. Fractional once old checks
    fade (see ``WINDOW``)."""

    checks: float = 0.0
    changes: float = 0.0
    observed: float = 0.0

    def observe(self, *, changed: bool, elapsed: float) -> History:
        """This history plus one check *elapsed* seconds after the previous visit
        (a negative or non-finite elapsed, from a skewed clock, counts as 0)."""
        elapsed = elapsed if math.isfinite(elapsed) and elapsed > 0 else 0.0
        checks = self.checks + 1
        changes = self.changes + (1 if changed else 0)
        observed = self.observed + elapsed
        if checks > WINDOW:
            scale = WINDOW / checks
            checks, changes, observed = WINDOW, changes * scale, observed * scale
        return History(checks, changes, observed)

    def change_rate(self) -> float | None:
        """Changes a second by Cho and Garcia-Molina's estimator for incomplete
        histories, -ln((n - X + 0.5) / (n + 0.5)) / (observed / n): unlike X/observed
        it does not read "changed at every check" as one change per interval. None
        until checks covered a usable time (a finite rate)."""
        changes = min(max(self.changes, 0.0), self.checks)
        return _estimate(self.checks, changes, self.observed)


def _estimate(checks: float, changes: float, observed: float) -> float | None:
    """Cho's estimate for *changes* (0 <= changes <= checks), None if not finite."""
    mean = observed / checks if checks > 0 else 0.0
    if not mean > 0:
        return None
    rate = -math.log((checks - changes + 0.5) / (checks + 0.5)) / mean
    return rate if math.isfinite(rate) else None


def decision_rate(history: History) -> float | None:
    """The rate adaptive plans with: Cho's estimate, except that a page with less
    than ``PRIOR_CHANGES`` changes in its window is planned as if it had that many
    (about 0.25 / observed seconds) rather than as static. "No change yet" is the
    usual state of a page that changes every month, and reading it as static
    starves such pages when the budget could refresh them (the simulator: 0.94 ->
    0.36 x uniform's staleness on a static-heavy mix at a generous budget; 0.25
    rather than 0.5 tells changed from unchanged pages sooner in a crawl's first
    days, as well as halving does). A page
    that never changes still drifts up, to the ceiling whenever the multiplier
    says the budget has better uses (its interval tends to 192 μ, the window
    capping its evidence at WINDOW checks)."""
    rate = history.change_rate()
    if rate is None or history.changes >= PRIOR_CHANGES:
        return rate
    prior = min(PRIOR_CHANGES, history.checks)
    return _estimate(history.checks, prior, history.observed) or rate


def small_change(old_fp: int | None, new_fp: int, threshold: int) -> bool:
    """Whether a revisit whose body differs from the last one's should still count
    as unchanged for the change rate (``History.observe(changed=False)``): its
    text's SimHash (``crawler.policy.simhash``) moved by at most *threshold* bits
    from *old_fp*. A ticking clock, a rotated advert or a new session token change
    every byte hash but not the page; read as changes they would make a lazy page
    look busy and spend the revisit budget on it.

    False without an *old_fp* (a page recorded before fingerprints: the body hash
    decides, as it did) and always for *threshold* 0 (every byte change counts).
    *old_fp* should be the fingerprint of the last version that counted as a
    change, not of the last visit's: small edits that add up then count once their
    sum passes the threshold, instead of each hiding behind the one before."""
    if old_fp is None or threshold <= 0:
        return False
    return hamming(old_fp, new_fp) <= threshold
