"""Unit tests for crawler/context/hostdelays.py HostDelays: what the frontier is told per host."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.context import hostdelays
from crawler.context.hostdelays import HostDelays
from crawler.context.runsettings import RunSettings, RunSettingsHolder
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
