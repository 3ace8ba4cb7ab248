"""Unit tests for crawler/frontier/frontierconfig.py: the frontier's settings, checked once."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

import crawler.defaults as project
from crawler.frontier.dedup import DedupConfig
from crawler.frontier.frontierconfig import FrontierConfig


def project_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def test_project_defaults_make_a_config() -> None:
    config = FrontierConfig.from_settings(project_settings(), "bfs")
    assert config.prefix == "bfs"
    assert config.shards == project.FRONTIER_SHARDS
    assert config.shard_by == project.FRONTIER_SHARD_BY
    assert config.host_concurrency == project.FRONTIER_HOST_CONCURRENCY
    assert config.lease_timeout == project.FRONTIER_LEASE_TIMEOUT
    assert config.maintenance_interval == project.FRONTIER_MAINTENANCE_INTERVAL
    assert config.push_batch == project.FRONTIER_PUSH_BATCH
    assert config.dedup == DedupConfig(
        project.FRONTIER_DEDUP,  # type: ignore[arg-type]
        project.FRONTIER_DEDUP_CAPACITY,
        project.FRONTIER_DEDUP_ERROR_RATE,
    )


@pytest.mark.parametrize(
    ("overrides", "prefix"),
    [
        ({}, "bfs"),
        ({"FRONTIER_KEY_PREFIX": ""}, "bfs"),
        ({"FRONTIER_KEY_PREFIX": "nightly"}, "nightly"),
        ({"FRONTIER_KEY_PREFIX": "team-a.crawl_2"}, "team-a.crawl_2"),
    ],
)
def test_prefix_defaults_to_the_spider_name(
    overrides: dict[str, object], prefix: str
) -> None:
    config = FrontierConfig.from_settings(project_settings(**overrides), "bfs")
    assert config.prefix == prefix


@pytest.mark.parametrize(
    "overrides",
    [
        {"FRONTIER_SHARDS": 1},
        {"FRONTIER_SHARDS": "1024"},
        {"FRONTIER_SHARD_BY": "domain"},
        {"FRONTIER_HOST_CONCURRENCY": 2, "CONCURRENT_REQUESTS_PER_DOMAIN": 2},
        {"FRONTIER_HOST_CONCURRENCY": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 0},
        {"FRONTIER_LEASE_TIMEOUT": 10.5, "FRONTIER_MAINTENANCE_INTERVAL": 5},
        {"FRONTIER_DEDUP": "exact"},
    ],
)
def test_valid_values_are_accepted(overrides: dict[str, object]) -> None:
    FrontierConfig.from_settings(project_settings(**overrides), "bfs")


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"FRONTIER_SHARDS": 3}, "FRONTIER_SHARDS"),
        ({"FRONTIER_SHARDS": 0}, "FRONTIER_SHARDS"),
        ({"FRONTIER_SHARDS": "abc"}, "FRONTIER_SHARDS"),
        ({"FRONTIER_SHARD_BY": "ip"}, "FRONTIER_SHARD_BY"),
        ({"FRONTIER_HOST_CONCURRENCY": 0}, "FRONTIER_HOST_CONCURRENCY"),
        ({"FRONTIER_HOST_CONCURRENCY": "two"}, "FRONTIER_HOST_CONCURRENCY"),
        (
            {"FRONTIER_LEASE_TIMEOUT": 1, "FRONTIER_MAINTENANCE_INTERVAL": 5},
            "FRONTIER_LEASE_TIMEOUT",
        ),
        (
            {"FRONTIER_LEASE_TIMEOUT": 10, "FRONTIER_MAINTENANCE_INTERVAL": 5},
            "FRONTIER_MAINTENANCE_INTERVAL",
        ),
        ({"FRONTIER_LEASE_TIMEOUT": "long"}, "FRONTIER_LEASE_TIMEOUT"),
        ({"FRONTIER_MAINTENANCE_INTERVAL": 0}, "FRONTIER_MAINTENANCE_INTERVAL"),
        ({"FRONTIER_LOG_INTERVAL": -1}, "FRONTIER_LOG_INTERVAL"),
        ({"FRONTIER_PUSH_BATCH": 0}, "FRONTIER_PUSH_BATCH"),
        ({"FRONTIER_DEDUP": "cuckoo"}, "FRONTIER_DEDUP"),
        ({"FRONTIER_DEDUP_CAPACITY": 0}, "FRONTIER_DEDUP_CAPACITY"),
        ({"FRONTIER_KEY_PREFIX": "a b"}, "FRONTIER_KEY_PREFIX"),
        ({"FRONTIER_KEY_PREFIX": "x{y}"}, "FRONTIER_KEY_PREFIX"),
        ({"FRONTIER_KEY_PREFIX": "crawl*"}, "FRONTIER_KEY_PREFIX"),
        (
            {"CONCURRENT_REQUESTS_PER_DOMAIN": 1, "FRONTIER_HOST_CONCURRENCY": 2},
            "CONCURRENT_REQUESTS_PER_DOMAIN",
        ),
    ],
)
def test_invalid_value_is_rejected_in_one_line_naming_the_setting(
    overrides: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=named) as info:
        FrontierConfig.from_settings(project_settings(**overrides), "bfs")
    assert "\n" not in str(info.value)


def test_spider_name_that_is_not_a_safe_prefix_is_rejected() -> None:
    with pytest.raises(ValueError, match="FRONTIER_KEY_PREFIX"):
        FrontierConfig.from_settings(project_settings(), "my spider")


@pytest.mark.parametrize(
    "name", ["FRONTIER_LEASE_TIMEOUT", "FRONTIER_MAINTENANCE_INTERVAL"]
)
def test_nan_duration_is_rejected(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        FrontierConfig.from_settings(project_settings(**{name: "nan"}), "bfs")


def test_non_number_dedup_capacity_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="FRONTIER_DEDUP_CAPACITY"):
        FrontierConfig.from_settings(
            project_settings(FRONTIER_DEDUP_CAPACITY="lots"), "bfs"
        )


DURATIONS = ["FRONTIER_LEASE_TIMEOUT", "FRONTIER_MAINTENANCE_INTERVAL"]
NUMBERS = [
    *DURATIONS,
    "FRONTIER_LOG_INTERVAL",
    "FRONTIER_DEDUP_ERROR_RATE",
]
INTEGERS = [
    "FRONTIER_SHARDS",
    "FRONTIER_HOST_CONCURRENCY",
    "FRONTIER_BFS_LOOKAHEAD",
    "FRONTIER_PUSH_BATCH",
    "FRONTIER_DEDUP_CAPACITY",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", float("inf")])
@pytest.mark.parametrize("name", NUMBERS)
def test_non_finite_number_is_rejected_in_one_line(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name) as info:
        FrontierConfig.from_settings(project_settings(**{name: value}), "bfs")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["soon", "", "1 2", [1]])
@pytest.mark.parametrize("name", NUMBERS + INTEGERS)
def test_non_number_is_rejected_in_one_line_naming_it(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name) as info:
        FrontierConfig.from_settings(project_settings(**{name: value}), "bfs")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["inf", float("inf"), "nan", "1.5"])
@pytest.mark.parametrize("name", INTEGERS)
def test_integer_setting_that_is_no_integer_is_rejected(
    name: str, value: object
) -> None:
    with pytest.raises(ValueError, match=name):
        FrontierConfig.from_settings(project_settings(**{name: value}), "bfs")


@pytest.mark.parametrize(
    ("overrides", "order"),
    [
        ({}, "bfs"),
        ({"FRONTIER_ORDER": "bfs", "FRONTIER_BFS_LOOKAHEAD": 0}, "bfs"),
        ({"FRONTIER_ORDER": "priority"}, "priority"),
    ],
)
def test_frontier_order(overrides: dict[str, object], order: str) -> None:
    config = FrontierConfig.from_settings(project_settings(**overrides), "bfs")
    assert config.order == order


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"FRONTIER_ORDER": "depth"}, "FRONTIER_ORDER must be one of bfs, priority"),
        ({"FRONTIER_ORDER": ""}, "FRONTIER_ORDER must be one of bfs, priority"),
        (
            {"FRONTIER_ORDER": "priority", "FRONTIER_BFS_LOOKAHEAD": 0},
            "FRONTIER_ORDER=priority needs FRONTIER_BFS_LOOKAHEAD=-1",
        ),
    ],
)
def test_bad_frontier_order_is_one_line(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as error:
        FrontierConfig.from_settings(project_settings(**overrides), "bfs")
    assert "\n" not in str(error.value)
