"""Retry-later policy: the delays setting, and when a held request may go again."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.policy.holdtimes import MAX_HOLDS, RetryLaterConfig, hold_until

CONFIG = RetryLaterConfig((30.0, 300.0, 1800.0))


@pytest.mark.parametrize(
    ("value", "delays"),
    [
        ([30, 300, 1800], (30.0, 300.0, 1800.0)),
        ("30,300,1800", (30.0, 300.0, 1800.0)),
        ("[1, 2.5]", (1.0, 2.5)),
        ("", ()),
        ([], ()),
        ("0", (0.0,)),
    ],
)
def test_delays_are_read_from_lists_and_strings(value, delays):
    config = RetryLaterConfig.from_settings(Settings({"RETRY_LATER_DELAYS": value}))
    assert config.delays == delays


@pytest.mark.parametrize(
    "value", ["-1", "abc", [True], "nan", "inf", "[1,", {"a": 1}, [1] * (MAX_HOLDS + 1)]
)
def test_bad_delays_are_refused_in_one_line_naming_the_setting(value):
    with pytest.raises(ValueError, match=r"^RETRY_LATER_DELAYS must be") as error:
        RetryLaterConfig.from_settings(Settings({"RETRY_LATER_DELAYS": value}))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("held_times", "not_before", "expected"),
    [
        (0, None, 1030.0),
        (1, None, 1300.0),
        (2, None, 2800.0),
        (3, None, None),  # every later try used: the failure is final
        (0, 5000.0, 5000.0),  # a longer Retry-After wins
        (0, 1010.0, 1030.0),  # a shorter one does not shorten the delay
        (-1, None, None),  # a hostile count in meta: no hold
    ],
)
def test_a_request_is_held_after_each_delay_in_turn(held_times, not_before, expected):
    until = hold_until(CONFIG, held_times=held_times, now=1000.0, not_before=not_before)
    assert until == expected


def test_no_delays_means_no_later_tries():
    assert hold_until(RetryLaterConfig(()), held_times=0, now=0.0) is None
