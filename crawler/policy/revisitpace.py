"""Adaptive's pace: the share of uniform's fetch budget it plans for, lowered
while the crawl falls behind its revisit schedule (it cannot fetch that much) and
grown back once it keeps up. The URL library updates it at each look and passes its
scale to ``multiplier_for``. Pure: the caller gives the time and the counts.
"""

from __future__ import annotations

from dataclasses import dataclass

# Pace: the least share of uniform's budget adaptive plans for, how much the share
# grows a look once the crawl keeps up, and the backlog that means "behind": this
# share of REVISIT_INTERVAL in seconds of fetching.
MIN_PACE = 0.05
PACE_RECOVERY = 1.1
BEHIND_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class Pace:
    """The share of uniform's budget adaptive plans for: all of it, unless the crawl
    falls behind its schedule, which means it cannot fetch that much (politeness
    delays, slow hosts, too few nodes). Behind, adaptive plans for what the crawl
    fetched meanwhile: its intervals then fit the fetches there are, and the budget
    goes where it keeps most pages fresh instead of every page being late alike.
    Caught up, the share grows back by ``PACE_RECOVERY`` a look, up to all."""

    scale: float = 1.0
    visits: float | None = None  # the library's visits at the last look
    at: float | None = None  # and when (epoch seconds)

    def update(
        self, *, now: float, visits: float, backlog: float, budget: float, lag: float
    ) -> Pace:
        """The pace after a look at *now*: *visits* recorded in the library so far,
        *backlog* URLs due and not yet revisited, *budget* uniform's fetches a
        second; behind when the backlog is more than *lag* seconds of fetching."""
        if self.visits is None or self.at is None or now <= self.at:
            return Pace(self.scale, visits, now)
        rate = max(visits - self.visits, 0.0) / (now - self.at)
        if rate > 0 and budget > 0 and backlog > rate * lag:
            scale = min(self.scale, max(rate / budget, MIN_PACE))
        else:
            scale = min(1.0, self.scale * PACE_RECOVERY)
        return Pace(scale, visits, now)
