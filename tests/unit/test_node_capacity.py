"""Unit tests for crawler/frontier/node/capacity.py: a node's pace and capacity."""

from __future__ import annotations

import pytest

from crawler.frontier.node.capacity import CapacityMeter, Sample, is_saturated


def test_capacity_is_measured_only_over_saturated_spells():
    meter = CapacityMeter()
    meter.record(Sample(0.0, 0, 16, saturated=False))
    meter.record(Sample(5.0, 50, 16, saturated=True))  # began unsaturated: no measure
    assert meter.capacity is None
    meter.record(Sample(10.0, 250, 16, saturated=True))
    assert meter.capacity == pytest.approx(40.0)
    meter.record(Sample(15.0, 300, 16, saturated=False))  # politeness-bound: ignored
    assert meter.capacity == pytest.approx(40.0)


def test_capacity_follows_new_spells_as_a_moving_average():
    meter = CapacityMeter()
    for at, pages in ((0.0, 0), (5.0, 200), (10.0, 300)):
        meter.record(Sample(at, pages, 16, saturated=True))
    assert meter.capacity == pytest.approx(0.5 * 40.0 + 0.5 * 20.0)


def test_a_concurrency_changed_at_run_time_scales_the_capacity_at_once():
    meter = CapacityMeter()
    meter.record(Sample(0.0, 0, 16, saturated=True))
    meter.record(Sample(5.0, 200, 16, saturated=True))
    meter.record(Sample(10.0, 260, 4, saturated=True))  # spell across the change
    assert meter.capacity == pytest.approx(10.0)


def test_the_pace_is_over_the_last_minute():
    meter = CapacityMeter()
    assert meter.pages_per_min() == 0.0
    meter.record(Sample(0.0, 0, 16, saturated=False))
    meter.record(Sample(30.0, 600, 16, saturated=False))
    assert meter.pages_per_min() == pytest.approx(1200.0)
    meter.record(Sample(90.0, 660, 16, saturated=False))  # the first sample is gone
    assert meter.pages_per_min() == pytest.approx(60.0)


def test_saturated_means_most_slots_busy_and_hosts_waiting():
    assert is_saturated(16, 16, 3)
    assert is_saturated(16, 12, 1)
    assert not is_saturated(16, 16, 0)
    assert not is_saturated(16, 4, 10)
