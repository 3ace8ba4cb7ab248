"""Running crawls registered in their directory: a password never reaches the disk."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from crawler.crawlstate.connection import CrawlRedis, RedisSettingsError
from crawler.crawlstate.running import RunningCrawl, register, running_crawl

if TYPE_CHECKING:
    from pathlib import Path

SECRET = "s3cret-Pa55"  # noqa: S105 (a test value)


def test_a_password_in_the_url_is_not_written(tmp_path: Path) -> None:
    url = f"redis://:{SECRET}@redis.internal:6379/0"
    entry = register(tmp_path, RunningCrawl("bfs", url, os.getpid(), time.time()))
    assert SECRET not in entry.read_text(encoding="utf-8")
    found = running_crawl(tmp_path, "bfs")
    assert found is not None
    assert found.redis_url == "redis://:***@redis.internal:6379/0"


def test_a_command_asks_for_the_password_it_was_not_given(tmp_path: Path) -> None:
    url = f"redis://:{SECRET}@redis.internal:6379/0"
    register(tmp_path, RunningCrawl("bfs", url, os.getpid(), time.time()))
    settings = Settings(
        {
            "FRONTIER_RUNNING_DIR": str(tmp_path),
            "FRONTIER_EMBEDDED_REDIS_DIR": str(tmp_path / "redis"),
        }
    )
    redis = CrawlRedis.from_settings(settings, join=True, prefix="bfs")
    with pytest.raises(RedisSettingsError, match=r"-s REDIS_URL=") as info:
        _ = redis.url
    assert "running as pid" in str(info.value)
    assert SECRET not in str(info.value)


def test_a_url_without_password_is_kept_whole(tmp_path: Path) -> None:
    url = "redis://127.0.0.1:6390/2"
    register(tmp_path, RunningCrawl("bfs", url, os.getpid(), time.time()))
    settings = Settings(
        {
            "FRONTIER_RUNNING_DIR": str(tmp_path),
            "FRONTIER_EMBEDDED_REDIS_DIR": str(tmp_path / "redis"),
        }
    )
    assert CrawlRedis.from_settings(settings, join=True, prefix="bfs").url == url
