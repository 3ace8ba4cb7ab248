"""Unit tests for crawler/policy/politeness.py: the fixed per-host delay."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.policy.politeness import FixedDelayPolicy


def settings_with(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


@pytest.mark.parametrize(
    ("value", "delay"),
    [(0, 0.0), (0.0, 0.0), (2.5, 2.5), ("1.5", 1.5), ("3", 3.0)],
)
def test_delay_is_read_from_download_delay(value: object, delay: float) -> None:
    policy = FixedDelayPolicy.from_settings(settings_with(DOWNLOAD_DELAY=value))
    assert policy.delay == delay


def test_project_default_delay_is_zero() -> None:
    assert FixedDelayPolicy.from_settings(settings_with()).delay == 0.0


@pytest.mark.parametrize("now", [0.0, 1e9, 1.7e9 + 0.5])
@pytest.mark.parametrize("host", ["example.com", "127.0.0.1", "::1"])
def test_every_host_waits_the_same_delay_at_any_time(host: str, now: float) -> None:
    policy = FixedDelayPolicy(2.5)
    assert policy.delay_for(host, now=now) == 2.5


@pytest.mark.parametrize("value", [-1, -0.001, "-2"])
def test_negative_delay_is_rejected_naming_the_setting(value: object) -> None:
    with pytest.raises(ValueError, match="DOWNLOAD_DELAY") as info:
        FixedDelayPolicy.from_settings(settings_with(DOWNLOAD_DELAY=value))
    assert "\n" not in str(info.value)


def test_nan_delay_is_rejected() -> None:
    with pytest.raises(ValueError, match="DOWNLOAD_DELAY"):
        FixedDelayPolicy.from_settings(settings_with(DOWNLOAD_DELAY="nan"))


def test_non_number_delay_is_rejected_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="DOWNLOAD_DELAY"):
        FixedDelayPolicy.from_settings(settings_with(DOWNLOAD_DELAY="soon"))


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", float("nan"), float("inf"), "soon", ""]
)
def test_bad_delay_is_rejected_in_one_line_naming_the_setting(value: object) -> None:
    with pytest.raises(ValueError, match="DOWNLOAD_DELAY") as info:
        FixedDelayPolicy.from_settings(settings_with(DOWNLOAD_DELAY=value))
    assert "\n" not in str(info.value)
