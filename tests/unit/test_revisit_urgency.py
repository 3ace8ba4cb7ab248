"""A revisit's priority by its interval (crawler.revisit.feeder.urgency)."""

from __future__ import annotations

import pytest

from crawler.revisit.feeder import MAX_URGENCY, urgency


@pytest.mark.parametrize(
    ("interval", "priority"),
    [
        (100.0, 0),  # the typical interval
        (50.0, 1),  # half: one step ahead
        (12.5, 3),
        (400.0, -2),  # four times as long: two steps behind
        (1e-30, MAX_URGENCY),  # bounded both ways
        (1e30, -MAX_URGENCY),
        (0.0, 0),  # no usable interval: no preference
        (float("nan"), 0),
    ],
)
def test_shorter_intervals_go_first(interval: float, priority: int) -> None:
    assert urgency(interval, typical=100.0) == priority
