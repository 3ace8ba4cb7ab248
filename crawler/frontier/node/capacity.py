"""What this node can do, measured: its pace over the last minute, and its capacity
(pages a second while it was saturated), which the weighted dispatch policies use
when ``FRONTIER_NODE_WEIGHT`` is not set.

Only saturated spells measure capacity: a node waiting on politeness delays fetches
slowly because its hosts make it, not because it cannot do more.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Seconds of heartbeats the pace is taken over.
PACE_WINDOW = 60.0
# Share of its concurrency in flight for a node to count as saturated.
SATURATED_SHARE = 0.75
# Weight of the newest saturated spell in the capacity (a moving average).
NEWEST = 0.5


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    pages: int
    concurrency: int
    saturated: bool


@dataclass
class CapacityMeter:
    """Samples taken at each heartbeat; the capacity and pace they give."""

    capacity: float | None = None  # pages/s while saturated; None until measured
    _samples: deque[Sample] = field(default_factory=deque)

    def record(self, sample: Sample) -> None:
        """Take one heartbeat's *sample*: a spell saturated at both ends measures the
        capacity; a concurrency changed at run time scales it at once."""
        last = self._samples[-1] if self._samples else None
        if (
            last is not None
            and self.capacity is not None
            and sample.concurrency != last.concurrency
            and last.concurrency > 0
        ):
            self.capacity *= sample.concurrency / last.concurrency
        if (
            last is not None
            and last.saturated
            and sample.saturated
            and sample.at > last.at
            and sample.concurrency == last.concurrency
        ):
            rate = max(0, sample.pages - last.pages) / (sample.at - last.at)
            self.capacity = (
                rate
                if self.capacity is None
                else NEWEST * rate + (1 - NEWEST) * self.capacity
            )
        self._samples.append(sample)
        while self._samples and self._samples[0].at < sample.at - PACE_WINDOW:
            self._samples.popleft()

    def pages_per_min(self) -> float:
        """Pages a minute over the last PACE_WINDOW seconds of samples."""
        if len(self._samples) < 2:
            return 0.0
        first, last = self._samples[0], self._samples[-1]
        if last.at <= first.at:
            return 0.0
        return max(0, last.pages - first.pages) * 60 / (last.at - first.at)


def is_saturated(concurrency: int, in_flight: int, waiting: int) -> bool:
    """Whether a node works at its capacity: most of its slots in use and hosts
    waiting for one."""
    return in_flight >= SATURATED_SHARE * concurrency and waiting > 0
