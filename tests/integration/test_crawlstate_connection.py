"""The crawl's Redis: named as scrapy-redis users name it (REDIS_HOST, REDIS_PORT), or
the private server, started on first use."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import pytest
import redis as redis_py
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.connection import CrawlRedis
from crawler.crawlstate.embedded import running_url
from crawler.crawlstate.keys import CrawlKeys
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")


@deferred_f_from_coro_f
async def test_a_crawl_named_by_host_and_port_shares_that_server(
    site, settings, redis, redis_url
):
    parts = urlsplit(redis_url)
    # No REDIS_URL, and no private server could start (its directory is empty).
    crawler = get_crawler(
        BfsSpider,
        settings(
            REDIS_URL="",
            REDIS_HOST=parts.hostname,
            REDIS_PORT=str(parts.port),
            REDIS_PARAMS='{"socket_timeout": 30, "client_name": "host-port-test"}',
            BFS_SCOPE="seed-hosts",
            DEPTH_LIMIT=1,
        ),
    )
    await crawler.crawl_async(seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == "finished"
    acked = crawler.stats.get_value("frontier/acked")
    assert acked > 1
    # The crawl's state is in the test server: its meta hash and its fate counters.
    assert redis.exists(KEYS.meta)
    counted = sum(
        int(redis.hget(KEYS.shard(shard).counters, "acked") or 0) for shard in range(8)
    )
    assert counted == acked


@deferred_f_from_coro_f
async def test_a_crawl_naming_two_servers_stops_with_one_line(
    site, settings, redis, redis_url, caplog
):
    crawler = get_crawler(
        BfsSpider,
        settings(REDIS_HOST="127.0.0.9", BFS_SCOPE="seed-hosts", DEPTH_LIMIT=1),
    )
    with caplog.at_level(logging.ERROR):
        await crawler.crawl_async(seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == "startup_failed"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "REDIS_URL and REDIS_HOST/REDIS_PORT" in errors[0]
    assert "\n" not in errors[0]
    assert not redis.keys("*")
    assert site.pages() == []


def test_the_private_server_starts_on_first_use_and_stops_on_close(tmp_path):
    settings = Settings({"FRONTIER_EMBEDDED_REDIS_DIR": str(tmp_path / "redis")})
    crawl = CrawlRedis.from_settings(settings)
    assert not (tmp_path / "redis").exists()  # nothing started by making it
    client = crawl.sync_client()
    try:
        assert client.ping()
        assert crawl.cluster is False
        # A command joins the running server, and leaves it running when done.
        command = CrawlRedis.from_settings(settings, join=True)
        assert command.url == crawl.url
        command.close()
        assert client.ping()
    finally:
        client.close()
        crawl.close()
    assert running_url(tmp_path / "redis") is None
    probe = redis_py.Redis.from_url(crawl.url, socket_connect_timeout=1)
    with pytest.raises(redis_py.ConnectionError):
        probe.ping()
    probe.close()


@pytest.mark.parametrize("analysis", ["False", "True"])
def test_scrapy_crawl_naming_two_servers_exits_1_with_one_line(tmp_path, analysis):
    """Scrapy's own `scrapy crawl`, whichever component meets the settings first."""
    result = scrapy_crawl(
        tmp_path,
        "-a",
        "seeds=http://127.0.0.2:9/",
        "-s",
        "REDIS_HOST=127.0.0.9",
        "-s",
        f"ANALYSIS_ENABLED={analysis}",
        redis_url="redis://127.0.0.1:9/0",
    )
    assert_one_line_stop(result, "REDIS_URL and REDIS_HOST/REDIS_PORT")
    assert "'finish_reason': 'startup_failed'" in result.stderr
