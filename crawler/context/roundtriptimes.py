"""How long this node's script round trips to Redis took, for the metrics endpoint.

One histogram a crawl, in its context: the frontier's store fills it, the metrics
exporter reads it.
"""

from __future__ import annotations

import math
from bisect import bisect_left

# Upper bounds (seconds) of the round-trip histogram: loopback takes tens of
# microseconds a script call, a Redis across a network milliseconds.
ROUND_TRIP_BOUNDS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
)  # fmt: skip


class RoundTripTimes:
    """How long this node's script round trips to Redis took: a histogram.

    Filled on the reactor thread (two clock reads and a ``bisect`` a round trip, no
    lock); read by the metrics endpoint's thread, which may see a round trip in the
    buckets and not yet in the sum: harmless for a rate.
    """

    def __init__(self) -> None:
        self._counts = [0] * (len(ROUND_TRIP_BOUNDS) + 1)  # the last: past the bounds
        self.total_seconds = 0.0

    def add(self, seconds: float) -> None:
        self._counts[bisect_left(ROUND_TRIP_BOUNDS, seconds)] += 1
        self.total_seconds += seconds

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, round trips that took at most that long), the last bound
        ``inf``: Prometheus' ``le`` buckets."""
        counts, running, buckets = list(self._counts), 0, []
        for bound, count in zip((*ROUND_TRIP_BOUNDS, math.inf), counts, strict=True):
            running += count
            buckets.append((bound, running))
        return buckets
