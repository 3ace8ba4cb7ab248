"""Run-time controls: parsing the control hash, checking run-time settings, and the
pure pieces of `scrapy frontier status` (shard ranges, ages, pages a minute)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.context.runsettings import RunSettings, with_runtime_settings
from crawler.crawlstate.controls import (
    RUNTIME_SETTINGS,
    Control,
    drain_field,
    read_control,
    setting_field,
)
from crawler.crawlstate.status import NodeStatus
from crawler.reports.status import age, shard_ranges


def project_settings() -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    return settings


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, Control()),
        ({b"paused": b"1"}, Control(paused=True)),
        ({"paused": "1"}, Control(paused=True)),
        ({b"paused": b"0"}, Control(ignored=("paused",))),
        (
            {b"set:POLITENESS_DAY_DELAY": b"2.5", b"set:DEPTH_LIMIT": b"3"},
            Control(settings={"DEPTH_LIMIT": "3", "POLITENESS_DAY_DELAY": "2.5"}),
        ),
        ({b"set:FRONTIER_SHARDS": b"4"}, Control(ignored=("set:FRONTIER_SHARDS",))),
        ({b"set:depth_limit": b"4"}, Control(ignored=("set:depth_limit",))),
        ({b"other": b"x", b"paused": b"1"}, Control(paused=True, ignored=("other",))),
        (
            {b"set:DEPTH_LIMIT": b"\xff", b"\xfe": b"1"},
            Control(ignored=("\\xfe", "set:DEPTH_LIMIT")),
        ),
        (
            {b"set:POLITENESS_OVERRIDES": b""},
            Control(settings={"POLITENESS_OVERRIDES": ""}),
        ),
        ({b"drain:n1": b"1"}, Control(draining=frozenset({"n1"}))),
        ({"drain:n1": "1", "drain:n2": "1"}, Control(draining=frozenset({"n1", "n2"}))),
        # hostile drains: another value, no node, a node id that is not UTF-8
        ({b"drain:n1": b"yes"}, Control(ignored=("drain:n1",))),
        ({b"drain:": b"1"}, Control(ignored=("drain:",))),
        ({b"drain:\xff": b"1"}, Control(ignored=("drain:\\xff",))),
        (
            {b"node:n1:set:CONCURRENT_REQUESTS": b"4"},
            Control(node_settings={"n1": {"CONCURRENT_REQUESTS": "4"}}),
        ),
        # Scrapy's alias, and a node id holding colons (the setting follows the last)
        (
            {b"node:host:7:set:DOWNLOAD_DELAY": b"2"},
            Control(node_settings={"host:7": {"POLITENESS_MIN_DELAY": "2"}}),
        ),
        # hostile per-node fields: no node, no setting, a setting not run-time
        ({b"node::set:DEPTH_LIMIT": b"2"}, Control(ignored=("node::set:DEPTH_LIMIT",))),
        ({b"node:n1:set:": b"2"}, Control(ignored=("node:n1:set:",))),
        ({b"node:n1": b"2"}, Control(ignored=("node:n1",))),
        (
            {b"node:n1:set:FRONTIER_SHARDS": b"2"},
            Control(ignored=("node:n1:set:FRONTIER_SHARDS",)),
        ),
        (
            {b"node:n1:set:DEPTH_LIMIT": b"\xff"},
            Control(ignored=("node:n1:set:DEPTH_LIMIT",)),
        ),
    ],
)
def test_read_control_parses_the_control_hash(fields, expected):
    assert read_control(fields) == expected


def test_setting_fields_are_what_read_control_reads():
    fields = {setting_field(name): "1" for name in RUNTIME_SETTINGS}
    fields |= {setting_field(name, "n:1"): "2" for name in RUNTIME_SETTINGS}
    fields[drain_field("n:2")] = "1"
    control = read_control(fields)
    assert control.settings == dict.fromkeys(sorted(RUNTIME_SETTINGS), "1")
    assert control.node_settings == {"n:1": dict.fromkeys(RUNTIME_SETTINGS, "2")}
    assert control.draining == {"n:2"}
    assert not control.ignored


def test_a_nodes_own_settings_win_over_the_crawl_wide_ones():
    control = read_control(
        {
            "set:DEPTH_LIMIT": "3",
            "set:CONCURRENT_REQUESTS": "16",
            "node:slow:set:CONCURRENT_REQUESTS": "4",
            "node:slow:set:FRONTIER_NODE_WEIGHT": "0.25",
            "node:other:set:DEPTH_LIMIT": "9",
        }
    )
    assert control.settings_for("slow") == {
        "CONCURRENT_REQUESTS": "4",
        "DEPTH_LIMIT": "3",
        "FRONTIER_NODE_WEIGHT": "0.25",
    }
    assert control.settings_for("fast") == {
        "CONCURRENT_REQUESTS": "16",
        "DEPTH_LIMIT": "3",
    }
    assert control.settings_for("other")["DEPTH_LIMIT"] == "9"


@pytest.mark.parametrize(
    ("name", "value", "read"),
    [
        ("POLITENESS_DAY_DELAY", "2.5", 2.5),
        ("POLITENESS_NIGHT_DELAY", "0", 0.0),
        ("POLITENESS_DAY_HOURS", "22:00-06:00", "22:00-06:00"),
        ("POLITENESS_JITTER", "0.1", 0.1),
        ("POLITENESS_OVERRIDES", '{"a.example": 30}', {"a.example": 30}),
        ("POLITENESS_TIMEZONES", '{"de": "Europe/Berlin"}', {"de": "Europe/Berlin"}),
        ("POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR", "120", 120),
        ("POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR", "", ""),
        ("POLITENESS_MIN_DELAY", "1.5", 1.5),
        ("DEPTH_LIMIT", "0", 0),
        ("DEPTH_LIMIT", "3", 3),
        ("CONCURRENT_REQUESTS", "4", 4),
        ("FRONTIER_NODE_WEIGHT", "2.5", 2.5),
        ("FRONTIER_NODE_WEIGHT", "0", 0.0),
    ],
)
def test_a_good_runtime_value_applies_as_dash_s_would(name, value, read):
    base = project_settings()
    base.freeze()
    result = with_runtime_settings(base, {name: value})
    if isinstance(read, dict):
        assert result.getdict(name) == read
    elif isinstance(read, float):
        assert result.getfloat(name) == read
    elif isinstance(read, int):
        assert result.getint(name) == read
    else:
        assert result.get(name) == read
    assert base.get(name) != value  # the project's settings are left alone


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("POLITENESS_DAY_DELAY", "abc"),
        ("POLITENESS_DAY_DELAY", "-1"),
        ("POLITENESS_DAY_DELAY", "nan"),
        ("POLITENESS_NIGHT_DELAY", "inf"),
        ("POLITENESS_DAY_HOURS", "8-22"),
        ("POLITENESS_DAY_HOURS", "08:00-08:00"),
        ("POLITENESS_JITTER", "-0.1"),
        ("POLITENESS_OVERRIDES", "not json"),
        ("POLITENESS_OVERRIDES", '{"a.example": "10s"}'),
        ("POLITENESS_TIMEZONES", '{"de": "Mars/Olympus_Mons"}'),
        ("POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR", "0"),
        ("POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR", "1.5"),
        ("POLITENESS_MIN_DELAY", "-1"),
        ("DEPTH_LIMIT", "-1"),
        ("DEPTH_LIMIT", "three"),
        ("CONCURRENT_REQUESTS", "0"),
        ("CONCURRENT_REQUESTS", "2.5"),
        ("CONCURRENT_REQUESTS", "many"),
        ("FRONTIER_NODE_WEIGHT", "-1"),
        ("FRONTIER_NODE_WEIGHT", "nan"),
        ("FRONTIER_NODE_WEIGHT", "heavy"),
    ],
)
def test_a_bad_runtime_value_fails_in_one_line_naming_the_setting(name, value):
    with pytest.raises(ValueError, match=name) as caught:
        with_runtime_settings(project_settings(), {name: value})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("value", ["deep", "", "1.5", "inf", "nan", "-1"])
def test_a_bad_depth_limit_at_start_fails_in_one_line_naming_it(value):
    """DEPTH_LIMIT is read, at start as at run time, by the run-time settings."""
    settings = project_settings()
    settings.set("DEPTH_LIMIT", value, priority="cmdline")
    with pytest.raises(ValueError, match="DEPTH_LIMIT") as caught:
        RunSettings.from_settings(settings, machine_zone="UTC")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "name", ["FRONTIER_SHARDS", "REDIS_URL", "depth_limit", "CONCURRENT_ITEMS"]
)
def test_only_runtime_settings_may_change(name):
    with pytest.raises(ValueError, match=f"^{name} cannot change while a crawl runs"):
        with_runtime_settings(project_settings(), {name: "1"})


@pytest.mark.parametrize(
    ("shards", "text"),
    [
        ([], ""),
        ([5], "5"),
        ([0, 1, 2, 3], "0-3"),
        ([32, 0, 1, 2, 3, 15], "0-3,15,32"),
        ([1, 1, 2, 4, 5, 7], "1-2,4-5,7"),
    ],
)
def test_shard_ranges_are_compact(shards, text):
    assert shard_ranges(shards) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-1.0, "0s ago"),
        (4.4, "4s ago"),
        (59.6, "1m00s ago"),
        (125, "2m05s ago"),
        (3700, "1h01m ago"),
        (90000, "1d01h ago"),
    ],
)
def test_ages_read_at_a_glance(seconds, text):
    assert age(seconds) == text


@pytest.mark.parametrize(
    ("node", "rate"),
    [
        (NodeStatus("n", True, pages_per_min=12.5, pages=1, started=0), 12.5),
        (NodeStatus("n", True, heartbeat=180.0, started=60.0, pages=100), 50.0),
        (NodeStatus("n", True, heartbeat=60.0, started=60.0, pages=100), None),
        (NodeStatus("n", True, heartbeat=180.0, pages=100), None),
        (NodeStatus("n", False), None),
    ],
)
def test_pages_a_minute_prefers_the_nodes_own_figure(node, rate):
    assert node.rate() == rate
