"""Unit tests for crawler/context/hostdelays.py HostDelays: what the frontier is told per host."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.context import hostdelays
from crawler.context.hostdelays import HostDelays
from crawler.context.runsettings import RunSettings, RunSettingsHolder
from crawler.policy.backoff import Learnt
from tests.unit.properties import PROPERTY

NOON_UTC = 1_763_812_800.0  # 2025-11-22 12:00 UTC: day on a UTC machine


def delays(seed: int = 0, **values: object) -> HostDelays:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(
        {"POLITENESS_DAY_DELAY": 2.0, "POLITENESS_NIGHT_DELAY": 1.0, **values},
        priority="cmdline",
    )
    run = RunSettingsHolder(RunSettings.from_settings(settings, machine_zone="UTC"))
    return HostDelays(run, rng=random.Random(seed))


def test_a_replaced_run_setting_is_the_delay_of_the_next_fetch():
    host_delays = delays(POLITENESS_JITTER=0)
    assert host_delays.delay_for("a.example", now=NOON_UTC) == 2.0
    settings = Settings({"POLITENESS_DAY_DELAY": 7.0, "POLITENESS_JITTER": 0})
    settings.setmodule("crawler.defaults", priority="default")
    host_delays.run_settings.replace(
        RunSettings.from_settings(settings, machine_zone="UTC")
    )
    assert host_delays.delay_for("a.example", now=NOON_UTC) == 7.0
    assert host_delays.config.day_delay == 7.0


def test_crawl_delay_raises_the_delay_and_none_forgets_it():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.set_crawl_delay("a.example", 5.0)
    assert host_delays.in_force("a.example", now=NOON_UTC).reason == "crawl-delay"
    assert host_delays.delay_for("a.example", now=NOON_UTC) == 5.0
    host_delays.set_crawl_delay("a.example", None)
    assert host_delays.delay_for("a.example", now=NOON_UTC) == 2.0


def test_a_backoff_lasts_until_its_time_then_is_forgotten():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.back_off("a.example", NOON_UTC + 30, "retry-after")
    held = host_delays.in_force("a.example", now=NOON_UTC)
    assert (held.seconds, held.reason) == (30.0, "retry-after")
    assert host_delays.delay_for("a.example", now=NOON_UTC + 20) == 10.0
    assert host_delays.in_force("a.example", now=NOON_UTC + 31).reason == "day"
    assert host_delays.delay_for("b.example", now=NOON_UTC) == 2.0  # others untouched


def test_a_shorter_backoff_never_shortens_a_longer_one():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.back_off("a.example", NOON_UTC + 600, "paused")
    host_delays.back_off("a.example", NOON_UTC + 5, "retry-after")
    assert host_delays.in_force("a.example", now=NOON_UTC).reason == "paused"


def test_remembered_hosts_are_bounded(monkeypatch):
    monkeypatch.setattr(hostdelays, "MAX_REMEMBERED_HOSTS", 3)
    host_delays = delays(POLITENESS_JITTER=0)
    for i in range(5):
        host_delays.set_crawl_delay(f"h{i}.example", 9.0)
        host_delays.back_off(f"h{i}.example", NOON_UTC + 60, "paused")
    assert host_delays.in_force("h0.example", now=NOON_UTC).reason == "day"
    assert host_delays.in_force("h4.example", now=NOON_UTC).reason == "paused"


@PROPERTY
@given(seed=st.integers(0, 2**32), jitter=st.floats(0, 3))
def test_the_delay_given_is_never_below_the_delay_in_force(seed, jitter):
    host_delays = delays(seed, POLITENESS_JITTER=jitter)
    given_delay = host_delays.delay_for("a.example", now=NOON_UTC)
    assert 2.0 <= given_delay <= 2.0 * (1 + jitter) + 1e-9


def test_a_throttle_raises_the_host_delay_and_says_why():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    held = host_delays.in_force("a.example", now=NOON_UTC)
    assert (held.seconds, held.reason) == (pytest.approx(2.2), "throttled")
    assert host_delays.delay_for("a.example", now=NOON_UTC) == pytest.approx(2.2)
    assert host_delays.delay_for("b.example", now=NOON_UTC) == 2.0  # others untouched


def test_the_learnt_delay_is_a_floor_under_the_jittered_delay():
    host_delays = delays(POLITENESS_JITTER=0.5)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    host_delays.throttled("a.example", "429", now=NOON_UTC)  # 2.2 x 2
    drawn = [host_delays.delay_for("a.example", now=NOON_UTC) for _ in range(50)]
    assert min(drawn) == pytest.approx(4.4)


def test_quiet_answers_bring_the_delay_back_and_then_forget_the_host():
    host_delays = delays(POLITENESS_JITTER=0, POLITENESS_BACKOFF_QUIET=2)
    host_delays.throttled("a.example", "503", now=NOON_UTC)
    host_delays.unshared()
    for _ in range(2 * 4):  # 2.2 x 0.97^4 = 1.95 < 2.0: forgotten on the 4th step
        host_delays.answered("a.example", now=NOON_UTC)
    assert host_delays.learnt("a.example") is None
    assert host_delays.in_force("a.example", now=NOON_UTC).reason == "day"
    assert host_delays.unshared()["a.example"] is None  # shared as forgotten


def test_only_changes_of_the_delay_are_shared_not_every_answer():
    host_delays = delays(POLITENESS_JITTER=0, POLITENESS_BACKOFF_QUIET=5)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    assert set(host_delays.unshared()) == {"a.example"}
    host_delays.answered("a.example", now=NOON_UTC)
    assert host_delays.unshared() == {}


def test_a_failed_write_is_shared_again_under_later_changes():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    lost = host_delays.unshared()
    host_delays.throttled("b.example", "429", now=NOON_UTC)
    host_delays.unshare_failed(lost)
    assert set(host_delays.unshared()) == {"a.example", "b.example"}


def test_adopted_records_count_unless_this_node_knows_newer():
    host_delays = delays(POLITENESS_JITTER=0)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    host_delays.adopt(
        {
            "a.example": Learnt(9.0, "429", NOON_UTC - 60),  # older than ours
            "b.example": Learnt(7.0, "timeout", NOON_UTC - 60),
        }
    )
    assert host_delays.delay_for("a.example", now=NOON_UTC) == pytest.approx(2.2)
    assert host_delays.delay_for("b.example", now=NOON_UTC) == 7.0


def test_with_the_back_off_off_throttles_teach_nothing():
    host_delays = delays(POLITENESS_JITTER=0, POLITENESS_BACKOFF=False)
    host_delays.throttled("a.example", "429", now=NOON_UTC)
    assert host_delays.delay_for("a.example", now=NOON_UTC) == 2.0
