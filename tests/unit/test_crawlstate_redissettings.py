"""Which Redis server the settings name: REDIS_URL, REDIS_HOST/PORT, REDIS_PARAMS."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings

from crawler.crawlstate.connection import CrawlRedis, RedisSettingsError
from crawler.crawlstate.redissettings import RedisSettings


def resolved(**values: Any) -> RedisSettings:
    settings = Settings({"REDIS_URL": "", "REDIS_HOST": "", "REDIS_PORT": None})
    settings.setdict(values, priority="cmdline")
    return RedisSettings.from_settings(settings)


@pytest.mark.parametrize(
    ("values", "url", "cluster"),
    [
        ({}, "", False),
        ({"REDIS_URL": "redis://r.example:6400/2"}, "redis://r.example:6400/2", None),
        ({"REDIS_HOST": "r.example"}, "redis://r.example:6379", None),
        ({"REDIS_PORT": 6380}, "redis://localhost:6380", None),
        ({"REDIS_PORT": "6380"}, "redis://localhost:6380", None),
        ({"REDIS_HOST": "10.0.0.5", "REDIS_PORT": 7000}, "redis://10.0.0.5:7000", None),
        ({"REDIS_HOST": "::1", "REDIS_PORT": 7000}, "redis://[::1]:7000", None),
        # The same server named both ways is not ambiguous: the URL (and its db) wins.
        (
            {"REDIS_URL": "redis://R.example:7000/3", "REDIS_HOST": "r.example"},
            "redis://R.example:7000/3",
            None,
        ),
        (
            {"REDIS_URL": "redis://:pw@r.example/1", "REDIS_PORT": 6379},
            "redis://:pw@r.example/1",
            None,
        ),
        # REDIS_PARAMS' host and port count as the settings, which win over them.
        ({"REDIS_PARAMS": {"host": "p.example"}}, "redis://p.example:6379", None),
        (
            {"REDIS_PARAMS": {"host": "p.example"}, "REDIS_HOST": "s.example"},
            "redis://s.example:6379",
            None,
        ),
        (
            {"REDIS_CLUSTER": True, "REDIS_HOST": "c.example"},
            "redis://c.example:6379",
            True,
        ),
    ],
)
def test_the_server_named(values: dict[str, Any], url: str, cluster: bool | None):
    server = resolved(**values)
    assert (server.url, server.cluster) == (url, cluster)
    assert server.private == (not url)


@pytest.mark.parametrize(
    ("values", "params"),
    [
        ({}, {}),
        ({"REDIS_PARAMS": {"password": "pw", "db": 2}}, {"password": "pw", "db": 2}),
        # -s gives it as JSON
        ({"REDIS_PARAMS": '{"socket_timeout": 30}'}, {"socket_timeout": 30}),
        (
            {"REDIS_PARAMS": {"retry_on_timeout": True, "encoding": "utf-8"}},
            {"retry_on_timeout": True, "encoding": "utf-8"},
        ),
        ({"REDIS_PARAMS": {"host": "h.example", "port": 1}}, {}),
    ],
)
def test_client_params(values: dict[str, Any], params: dict[str, Any]):
    assert resolved(**values).params == params


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (
            {"REDIS_URL": "redis://a.example:6379/0", "REDIS_HOST": "b.example"},
            ["REDIS_URL", "REDIS_HOST", "different servers"],
        ),
        (
            {"REDIS_URL": "redis://a.example:6379/0", "REDIS_PORT": 6380},
            ["different servers"],
        ),
        (
            {"REDIS_URL": "unix:///tmp/redis.sock", "REDIS_HOST": "a.example"},
            ["different servers"],
        ),
        ({"REDIS_PORT": "http"}, ["REDIS_PORT", "'http'"]),
        ({"REDIS_PORT": 70000}, ["REDIS_PORT", "70000"]),
        ({"REDIS_PARAMS": "not json"}, ["REDIS_PARAMS", "dict"]),
        (
            {"REDIS_PARAMS": {"redis_cls": "myproject.MyRedis"}},
            ["REDIS_PARAMS['redis_cls']", "not supported", "REDIS_CLUSTER"],
        ),
        ({"REDIS_PARAMS": {"decode_responses": True}}, ["decode_responses", "bytes"]),
        ({"REDIS_PARAMS": {"sockettimeout": 3}}, ["'sockettimeout'", "socket_timeout"]),
        ({"REDIS_PARAMS": {"password": ["a"]}}, ["'password'", "plain value"]),
    ],
)
def test_bad_settings_say_what_to_fix(values: dict[str, Any], words: list[str]):
    with pytest.raises(ValueError, match=r"^REDIS_") as caught:
        resolved(**values)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_crawl_redis_turns_bad_settings_into_one_line_errors():
    settings = Settings({"REDIS_URL": "redis://a.example/0", "REDIS_HOST": "b.example"})
    with pytest.raises(RedisSettingsError, match=r"^Bad setting: REDIS_URL and "):
        CrawlRedis.from_settings(settings)


def test_a_command_without_a_named_server_or_kept_data_says_so(tmp_path):
    settings = Settings({"FRONTIER_EMBEDDED_REDIS_DIR": str(tmp_path / "none")})
    server = CrawlRedis.from_settings(settings, join=True)
    with pytest.raises(RedisSettingsError, match="REDIS_URL is empty"):
        _ = server.url


def test_a_crawl_with_no_server_and_no_private_directory_says_so():
    settings = Settings({"FRONTIER_EMBEDDED_REDIS_DIR": ""})
    server = CrawlRedis.from_settings(settings)
    with pytest.raises(
        RedisSettingsError, match="FRONTIER_EMBEDDED_REDIS_DIR is empty"
    ):
        _ = server.url


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL 'localhost:6379' has no scheme"),
        ({"REDIS_HOST": "local host"}, "REDIS_HOST 'redis://local host:6379' has a"),
    ],
)
def test_a_malformed_server_is_refused_naming_the_setting_it_came_from(values, message):
    with pytest.raises(ValueError, match=message):
        resolved(**values)
