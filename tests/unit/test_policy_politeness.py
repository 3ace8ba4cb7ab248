"""Unit tests for crawler/policy/politeness.py: the delay in force and its reason.

Time is an argument: each ``now`` is built from an aware datetime, so a test reads
as the wall time it is about.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

import crawler.defaults as project
from crawler.policy.politeness import Delay, PolitenessConfig, parse_day_hours
from crawler.policy.suffixes import most_specific
from crawler.policy.timezones import ZoneResolver
from tests.unit.properties import PROPERTY

BERLIN = ZoneInfo("Europe/Berlin")
TOKYO = ZoneInfo("Asia/Tokyo")


def project_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def config(**values: object) -> PolitenessConfig:
    """The policy from the project defaults plus *values*, on a UTC machine."""
    return PolitenessConfig.from_settings(
        project_settings(**values), machine_zone="UTC"
    )


def at(*wall: int, zone: tzinfo = UTC) -> float:
    """The epoch time of the wall time *wall* (year, month, day, h, m, s) in *zone*."""
    return datetime(*wall, tzinfo=zone).timestamp()


SUMMER = (2024, 6, 12)
WINTER = (2024, 1, 17)


# --- Settings -----------------------------------------------------------------------


def test_project_defaults_make_the_documented_policy() -> None:
    policy = config()
    assert policy.day_delay == project.POLITENESS_DAY_DELAY == 10.0
    assert policy.night_delay == project.POLITENESS_NIGHT_DELAY == 1.0
    assert policy.day_hours == (8 * 60, 22 * 60)
    assert policy.jitter == project.POLITENESS_JITTER == 0.5
    assert policy.max_crawl_delay == project.ROBOTS_MAX_CRAWL_DELAY == 60.0
    assert policy.floor == project.POLITENESS_MIN_DELAY
    assert policy.overrides == {}
    assert policy.max_pages_per_hour is None
    assert policy.zones.default == "UTC"


def test_command_line_strings_are_parsed() -> None:
    policy = config(
        POLITENESS_DAY_DELAY="5",
        POLITENESS_NIGHT_DELAY="0.5",
        POLITENESS_JITTER="0",
        POLITENESS_DAY_HOURS="07:30-23:00",
        POLITENESS_OVERRIDES='{"Example.DE.": "20", "slow.org": 30.5}',
        POLITENESS_TIMEZONES='{"example.com": "Asia/Tokyo"}',
        POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR="120",
        ROBOTS_MAX_CRAWL_DELAY="30",
        POLITENESS_MIN_DELAY="0.25",
    )
    assert (policy.day_delay, policy.night_delay, policy.jitter) == (5.0, 0.5, 0.0)
    assert policy.day_hours == (7 * 60 + 30, 23 * 60)
    assert policy.overrides == {"example.de": 20.0, "slow.org": 30.5}
    assert policy.zones.zone_name("www.example.com") == "Asia/Tokyo"
    assert policy.max_pages_per_hour == 120
    assert (policy.max_crawl_delay, policy.floor) == (30.0, 0.25)


@pytest.mark.parametrize(
    ("value", "cap"),
    [(None, None), ("", None), ("  ", None), ("None", None), ("none", None),
     (1, 1), ("60", 60), (" 60 ", 60), (60.0, 60)],
)  # fmt: skip
def test_hourly_cap_is_a_positive_integer_or_none(value: object, cap: int) -> None:
    assert (
        config(POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR=value).max_pages_per_hour == cap
    )


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("08:00-22:00", (480, 1320)),
        ("8:00 - 22:00", (480, 1320)),
        ("22:00-06:00", (1320, 360)),
        ("00:00-24:00", (0, 1440)),
        ("08:00-00:00", (480, 0)),
        ("23:59-00:00", (1439, 0)),
    ],
)
def test_parse_day_hours(text: str, hours: tuple[int, int]) -> None:
    assert parse_day_hours(text) == hours


HOURS = "POLITENESS_DAY_HOURS"
OVERRIDES = "POLITENESS_OVERRIDES"
CAP = "POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR"
BAD_SETTINGS = [
    ("POLITENESS_DAY_DELAY", "fast"),
    ("POLITENESS_DAY_DELAY", -1),
    ("POLITENESS_DAY_DELAY", "nan"),
    ("POLITENESS_DAY_DELAY", "inf"),
    ("POLITENESS_NIGHT_DELAY", "-0.5"),
    ("POLITENESS_JITTER", -0.1),
    ("POLITENESS_MIN_DELAY", -1),
    ("ROBOTS_MAX_CRAWL_DELAY", "-1"),
    *[(HOURS, text) for text in ["8-22", "08:00", "08:00-22:00-23:00", "", "8am-10pm",
                                 "25:00-06:00", "08:60-22:00", "24:00-06:00",
                                 "08:00-24:01", "08:00-08:00", "08:00-+9:00",
                                 "08:00-1_0:00", "\u0660\u0668:\u0660\u0660-22:00", None, 800]],
    *[(OVERRIDES, text) for text in ['{"a.de": -1}', '{"a.de": "slow"}',
                                     '{"a.de": true}', '{"a.de": null}',
                                     '{"a.de": "nan"}', '{"a.de": 1e400}',
                                     '{"a.de": [1]}', "[1, 2]", "{not json", '"a.de"',
                                     '{"": 5}', '{"A.de": 1, "a.de.": 2}']],
    *[(CAP, value) for value in [0, -5, "ten", 12.5, "12.5", "1_0", "+5", True, [1],
                                 float("inf"), "\u0663", "9" * 5000]],
    ("POLITENESS_TIMEZONES", '{"de": "Mars/Olympus"}'),
    ("POLITENESS_DEFAULT_TIMEZONE", "Nowhere/City"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_a_bad_setting_is_named_in_one_line(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{name}") as info:
        config(**{name: value})
    assert "\n" not in str(info.value)


# --- Day and night -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wall", "day"),
    [
        ((0, 0, 0), False),
        ((7, 59, 59), False),
        ((8, 0, 0), True),
        ((12, 0, 0), True),
        ((21, 59, 59), True),
        ((22, 0, 0), False),
        ((23, 59, 59), False),
    ],
)
@pytest.mark.parametrize("date", [SUMMER, WINTER], ids=["summer", "winter"])
@pytest.mark.parametrize(
    ("host", "zone"),
    [("example.de", BERLIN), ("example.jp", TOKYO), ("example.com", UTC)],
)
def test_day_edges_in_host_local_time(
    host: str,
    zone: ZoneInfo,
    date: tuple[int, int, int],
    wall: tuple[int, int, int],
    day: bool,
) -> None:
    policy = config()
    now = at(*date, *wall, zone=zone)
    assert policy.is_day(host, now=now) is day
    expected = Delay(10.0, "day") if day else Delay(1.0, "night")
    assert policy.in_force(host, now=now) == expected


@pytest.mark.parametrize(
    ("hours", "wall", "day"),
    [
        ("22:00-06:00", (21, 59, 59), False),
        ("22:00-06:00", (22, 0, 0), True),
        ("22:00-06:00", (0, 0, 0), True),
        ("22:00-06:00", (5, 59, 59), True),
        ("22:00-06:00", (6, 0, 0), False),
        ("22:00-06:00", (12, 0, 0), False),
        ("00:00-24:00", (0, 0, 0), True),
        ("00:00-24:00", (23, 59, 59), True),
        ("08:00-24:00", (23, 59, 59), True),
        ("08:00-24:00", (0, 0, 0), False),
        ("08:00-00:00", (23, 59, 59), True),
        ("08:00-00:00", (0, 0, 0), False),
    ],
)
def test_day_hours_may_wrap_past_midnight(
    hours: str, wall: tuple[int, int, int], day: bool
) -> None:
    policy = config(POLITENESS_DAY_HOURS=hours)
    assert policy.is_day("example.de", now=at(*SUMMER, *wall, zone=BERLIN)) is day


@pytest.mark.parametrize(
    ("host", "day"),
    [
        ("example.jp", True),  # 11:00 in Tokyo
        ("example.cn", True),  # 10:00 in Shanghai
        ("example.com", False),  # 02:00 on the UTC machine
        ("example.de", False),  # 04:00 in Berlin
        ("127.0.0.2", False),  # an IP address: the default zone
    ],
)
def test_a_host_far_east_is_in_its_day_while_utc_is_night(host: str, day: bool) -> None:
    assert config().is_day(host, now=at(*SUMMER, 2, 0, 0)) is day


def test_the_default_zone_decides_for_unplaced_hosts() -> None:
    policy = config(POLITENESS_DEFAULT_TIMEZONE="Asia/Tokyo")
    assert policy.is_day("example.com", now=at(*SUMMER, 2, 0, 0)) is True
    assert policy.is_day("example.de", now=at(*SUMMER, 2, 0, 0)) is False


def test_configured_zones_decide_before_the_cctld() -> None:
    policy = config(POLITENESS_TIMEZONES={"example.de": "Asia/Tokyo"})
    assert policy.is_day("www.example.de", now=at(*SUMMER, 2, 0, 0)) is True
    assert policy.is_day("other.de", now=at(*SUMMER, 2, 0, 0)) is False


# Europe/Berlin: 2024-03-31 01:00 UTC clocks jump 02:00 -> 03:00 (CET -> CEST);
# 2024-10-27 01:00 UTC they fall back 03:00 -> 02:00 (CEST -> CET).
@pytest.mark.parametrize(
    ("hours", "utc", "day"),
    [
        pytest.param(None, (2024, 3, 30, 6, 30), False, id="sat-07:30-CET"),
        pytest.param(None, (2024, 3, 31, 5, 59, 59), False, id="sun-07:59:59-CEST"),
        pytest.param(None, (2024, 3, 31, 6, 0), True, id="sun-08:00-CEST"),
        pytest.param(None, (2024, 3, 31, 6, 30), True, id="sun-08:30-CEST"),
        pytest.param(None, (2024, 3, 31, 19, 59, 59), True, id="sun-21:59:59-CEST"),
        pytest.param(None, (2024, 3, 31, 20, 0), False, id="sun-22:00-CEST"),
        pytest.param("02:00-03:00", (2024, 3, 31, 0, 59, 59), False, id="01:59:59"),
        pytest.param("02:00-03:00", (2024, 3, 31, 1, 0), False, id="skipped-hour"),
        pytest.param(None, (2024, 10, 26, 6, 30), True, id="sat-08:30-CEST"),
        pytest.param(None, (2024, 10, 27, 6, 30), False, id="sun-07:30-CET"),
        pytest.param(None, (2024, 10, 27, 6, 59, 59), False, id="sun-07:59:59-CET"),
        pytest.param(None, (2024, 10, 27, 7, 0), True, id="sun-08:00-CET"),
        pytest.param(None, (2024, 10, 27, 20, 59, 59), True, id="sun-21:59:59-CET"),
        pytest.param(None, (2024, 10, 27, 21, 0), False, id="sun-22:00-CET"),
        pytest.param("02:00-03:00", (2024, 10, 26, 23, 59, 59), False, id="01:59:59"),
        pytest.param("02:00-03:00", (2024, 10, 27, 0, 30), True, id="02:30-CEST"),
        pytest.param("02:00-03:00", (2024, 10, 27, 1, 30), True, id="02:30-CET"),
        pytest.param("02:00-03:00", (2024, 10, 27, 2, 0), False, id="03:00-CET"),
    ],
)
def test_day_follows_the_wall_clock_across_dst(
    hours: str | None, utc: tuple[int, ...], day: bool
) -> None:
    policy = config(**({"POLITENESS_DAY_HOURS": hours} if hours else {}))
    assert policy.is_day("example.de", now=at(*utc)) is day


# --- The delay in force ----------------------------------------------------------------

DAY = at(*SUMMER, 12, 0, 0, zone=BERLIN)
NIGHT = at(*SUMMER, 3, 0, 0, zone=BERLIN)
NESTED = {"de": 30, "example.de": 15, "slow.example.de": 2}


@pytest.mark.parametrize(
    ("values", "host", "now", "crawl_delay", "expected"),
    [
        ({}, "example.de", DAY, None, Delay(10.0, "day")),
        ({}, "example.de", NIGHT, None, Delay(1.0, "night")),
        ({}, "example.de", NIGHT, 5.0, Delay(5.0, "crawl-delay")),
        ({}, "example.de", DAY, 5.0, Delay(10.0, "day")),
        ({}, "example.de", DAY, 10.0, Delay(10.0, "day")),  # a tie: the general rule
        ({}, "example.de", DAY, 600.0, Delay(60.0, "crawl-delay")),
        ({}, "example.de", DAY, math.inf, Delay(60.0, "crawl-delay")),
        ({}, "example.de", NIGHT, math.nan, Delay(1.0, "night")),
        ({}, "example.de", NIGHT, -5.0, Delay(1.0, "night")),
        ({"ROBOTS_MAX_CRAWL_DELAY": 5}, "example.de", DAY, 30.0, Delay(10.0, "day")),
        ({"ROBOTS_MAX_CRAWL_DELAY": 5}, "example.de", NIGHT, 30.0,
         Delay(5.0, "crawl-delay")),
        ({"POLITENESS_OVERRIDES": NESTED}, "x.example.de", NIGHT, None,
         Delay(15.0, "override")),
        ({"POLITENESS_OVERRIDES": NESTED}, "WWW.Slow.Example.DE.", NIGHT, None,
         Delay(2.0, "override")),
        ({"POLITENESS_OVERRIDES": NESTED}, "www.slow.example.de", DAY, None,
         Delay(10.0, "day")),
        ({"POLITENESS_OVERRIDES": NESTED}, "notexample.de", NIGHT, None,
         Delay(30.0, "override")),
        ({"POLITENESS_OVERRIDES": NESTED}, "example.de", DAY, 40.0,
         Delay(40.0, "crawl-delay")),
        ({"POLITENESS_OVERRIDES": NESTED}, "example.com", NIGHT, None,
         Delay(1.0, "night")),
        ({"POLITENESS_MIN_DELAY": 12}, "example.de", DAY, None, Delay(12.0, "download-delay")),
        ({"POLITENESS_MIN_DELAY": 12}, "example.de", DAY, 20.0, Delay(20.0, "crawl-delay")),
        ({CAP: 60}, "example.de", DAY, None, Delay(60.0, "hourly-cap")),
        ({CAP: 100}, "example.de", NIGHT, 30.0, Delay(36.0, "hourly-cap")),
        ({CAP: 3600}, "example.de", NIGHT, None, Delay(1.0, "night")),
        ({CAP: 7200}, "example.de", NIGHT, None, Delay(1.0, "night")),
    ],
)  # fmt: skip
def test_the_largest_rule_is_in_force_and_named(
    values: dict[str, object],
    host: str,
    now: float,
    crawl_delay: float | None,
    expected: Delay,
) -> None:
    assert config(**values).in_force(host, now=now, crawl_delay=crawl_delay) == expected


@pytest.mark.parametrize(
    ("host", "value"),
    [
        ("a.slow.example.de", 2),
        ("slow.example.de", 2),
        ("example.de", 15),
        ("ample.de", 30),
        ("de", 30),
        ("example.com", None),
        ("", None),
    ],
)
def test_most_specific_suffix(host: str, value: float | None) -> None:
    assert most_specific(host, NESTED) == value


@pytest.mark.parametrize(
    ("values", "shortest"),
    [
        ({}, 1.0),
        ({"POLITENESS_NIGHT_DELAY": 20}, 10.0),
        ({"POLITENESS_MIN_DELAY": 3}, 3.0),
        ({CAP: 60}, 60.0),
        ({"POLITENESS_OVERRIDES": {"de": 99}}, 1.0),
    ],
)
def test_shortest_is_the_least_any_host_gets(
    values: dict[str, object], shortest: float
) -> None:
    assert config(**values).shortest() == shortest


# --- Jitter -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jitter", "draw", "seconds"),
    [
        (0.5, 0.0, 10.0),
        (0.5, 0.5, 12.5),
        (0.5, 1.0, 15.0),
        (0.5, -1.0, 10.0),
        (0.5, 2.0, 15.0),
        (0.5, math.nan, 10.0),
        (0.5, math.inf, 15.0),
        (0.0, 0.7, 10.0),
        (2.0, 1.0, 30.0),
    ],
)
def test_jitter_stretches_the_delay_by_the_draw(
    jitter: float, draw: float, seconds: float
) -> None:
    assert config(POLITENESS_JITTER=jitter).jittered(10.0, draw) == seconds


# --- Properties -----------------------------------------------------------------------

DURATIONS = st.floats(min_value=0, max_value=1e6)
UTC_ONLY = ZoneResolver({}, "UTC")


@PROPERTY
@given(
    seconds=DURATIONS,
    jitter=st.floats(min_value=0, max_value=100),
    draw=st.floats(allow_nan=True, allow_infinity=True),
)
def test_jitter_stays_within_its_bounds(
    seconds: float, jitter: float, draw: float
) -> None:
    policy = PolitenessConfig(10.0, 1.0, (480, 1320), UTC_ONLY, jitter=jitter)
    assert seconds <= policy.jittered(seconds, draw) <= seconds * (1 + jitter)


RULES = st.fixed_dictionaries(
    {
        "day": DURATIONS,
        "night": DURATIONS,
        "floor": DURATIONS,
        "max_crawl_delay": DURATIONS,
        "override": st.none() | DURATIONS,
        "cap": st.none() | st.integers(min_value=1, max_value=10**9),
    }
)


@PROPERTY
@given(
    rules=RULES,
    crawl_delay=st.none() | st.floats(allow_nan=True, allow_infinity=True),
    now=st.floats(min_value=0, max_value=4e9),
    host=st.sampled_from(["example.de", "www.example.de", "example.com", "10.0.0.1"]),
)
def test_in_force_is_never_below_any_of_its_inputs(
    rules: dict[str, Any], crawl_delay: float | None, now: float, host: str
) -> None:
    override, cap = rules["override"], rules["cap"]
    policy = PolitenessConfig(
        rules["day"], rules["night"], (480, 1320), ZoneResolver({}, "Asia/Tokyo"),
        overrides={"example.de": override} if override is not None else {},
        floor=rules["floor"], max_crawl_delay=rules["max_crawl_delay"],
        max_pages_per_hour=cap,
    )  # fmt: skip
    delay = policy.in_force(host, now=now, crawl_delay=crawl_delay)
    day = policy.is_day(host, now=now)
    inputs = [rules["day"] if day else rules["night"], rules["floor"]]
    if crawl_delay is not None and not math.isnan(crawl_delay):
        inputs.append(min(crawl_delay, rules["max_crawl_delay"]))
    if override is not None and host.endswith("example.de"):
        inputs.append(override)
    if cap is not None:
        inputs.append(3600 / cap)
    assert delay.seconds == max(inputs)
    assert delay.seconds >= policy.shortest()


@PROPERTY
@given(host=st.text(), now=st.floats(min_value=0, max_value=4e9))
def test_any_text_as_host_gets_a_delay(host: str, now: float) -> None:
    delay = config(POLITENESS_OVERRIDES={"de": 3}).in_force(host, now=now)
    assert delay.seconds >= 1.0
