"""Per-host traffic counters after whole crawls, and `scrapy frontier hosts` (with
each host's timeout record)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py
from scrapy import Request, signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.crawlstate.keys import CrawlKeys
from crawler.middlewares.traffic import TrafficMiddleware
from crawler.policy.tiers import HostHealth
from crawler.policy.trafficconfig import TrafficConfig
from crawler.reports.hosts import read_health
from crawler.settings import ADDONS
from crawler.spiders.bfs import BfsSpider
from tests.servers import ROOT

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")


async def crawl(settings: dict[str, Any], site: RunningSite) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def hostname(authority: str) -> str:
    return authority.rsplit(":", 1)[0]


def counters(redis, host: str, keys: CrawlKeys = KEYS) -> dict[str, str]:
    return {
        k.decode(): v.decode() for k, v in redis.hgetall(keys.traffic(host)).items()
    }


def frontier(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@deferred_f_from_coro_f
async def test_counters_match_the_sites_request_log(site, settings, redis):
    started = time.time()
    crawler = await crawl(settings(DEPTH_LIMIT=3, ROBOTSTXT_OBEY=True), site)
    rows = site.log()
    by_host = Counter(hostname(row["host"]) for row in rows)
    assert len(by_host) == site.spec.hosts
    for host, requests in by_host.items():
        mine = [row for row in rows if hostname(row["host"]) == host]
        found = counters(redis, host)
        assert int(found["requests"]) == requests
        assert int(found["2xx"]) == sum(row["status"] == 200 for row in mine)
        robots = [row for row in mine if row["path"] == "/robots.txt"]
        assert [row["status"] for row in robots] == [404]
        assert int(found["4xx"]) == 1
        assert int(found["bytes"]) > 1000 * int(found["2xx"])
        assert "errors" not in found
        assert started <= float(found["last_fetch"]) <= time.time()
        assert (found["delay"], found["reason"]) in {("0", "day"), ("0", "night")}
        assert redis.zscore(KEYS.traffic_rank("requests"), host) == requests
        assert redis.zscore(KEYS.traffic_rank("bytes"), host) == int(found["bytes"])
    assert redis.zcard(KEYS.traffic_rank("errors")) == 0
    assert crawler.stats.get_value("traffic/flush_errors") is None


@deferred_f_from_coro_f
async def test_download_errors_are_counted(site, settings, redis):
    closed = "127.0.0.1:9"  # the discard port: nothing listens on loopback here
    crawler = get_crawler(BfsSpider, settings(RETRY_TIMES=1))
    await crawler.crawl_async(seeds=f"http://{closed}/,{site.seeds[0]}")
    found = counters(redis, "127.0.0.1")
    assert found["requests"] == found["errors"] == "2"  # the first try and a retry
    assert redis.zscore(KEYS.traffic_rank("errors"), "127.0.0.1") == 2
    top = frontier("hosts", "--sort", "errors", "-s", f"REDIS_URL={redis_url(redis)}")
    assert top.returncode == 0, top.stderr
    assert [line.split()[0] for line in top.stdout.splitlines()[1:]] == ["127.0.0.1"]


def redis_url(redis) -> str:
    kwargs = redis.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


@deferred_f_from_coro_f
async def test_frontier_hosts_lists_the_top_hosts_in_order(site, settings, redis):
    await crawl(settings(DEPTH_LIMIT=2), site)
    result = frontier(
        "hosts",
        "--top",
        "2",
        "--sort",
        "requests",
        "-s",
        f"REDIS_URL={redis_url(redis)}",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["host", "requests", "bytes"]
    counts = Counter(hostname(row["host"]) for row in site.log())
    # ZREVRANGE order: most requests first, equal counts by name, descending.
    expected = sorted(counts, key=lambda host: (counts[host], host), reverse=True)
    shown = [line.split() for line in lines[1:]]
    assert [row[0] for row in shown] == expected[:2]
    assert [int(row[1]) for row in shown] == [counts[host] for host in expected[:2]]


def slow_column(table: str) -> dict[str, str]:
    """Host -> its cell in the ``slow`` column of `scrapy frontier hosts`' table."""
    header, *rows = table.splitlines()
    start = header.index("slow")
    after = header[start:].split()[1:2]  # the next column's name, if any
    end = header.index(after[0], start) if after else None
    return {row.split()[0]: row[start:end].strip() for row in rows}


def test_frontier_hosts_shows_which_hosts_are_slow_or_paused(redis):
    now = time.time()
    records = {
        "slow.example": HostHealth(slow=True).to_json(),
        "paused.example": HostHealth(paused_until=now + 600).to_json(),
        "both.example": HostHealth(slow=True, paused_until=now + 3 * 86400).to_json(),
        "was-paused.example": HostHealth(paused_until=now - 5).to_json(),
        "huge.example": HostHealth(paused_until=1e300).to_json(),
        "evil.example": '{"s": "\u001b[2J"}',
    }
    redis.hset(KEYS.health, mapping=records)
    hosts = [*records, "fine.example"]  # no record
    redis.zadd(KEYS.traffic_rank("requests"), dict.fromkeys(hosts, 1))
    result = frontier("hosts", "-s", f"REDIS_URL={redis_url(redis)}")
    assert result.returncode == 0, result.stderr

    def clock(moment: float, shape: str) -> str:
        return datetime.fromtimestamp(moment, UTC).strftime(shape)

    assert slow_column(result.stdout) == {
        "slow.example": "slow",
        "paused.example": f"paused until {clock(now + 600, '%H:%M:%SZ')}",
        "both.example": "slow, paused until "
        + clock(now + 3 * 86400, "%Y-%m-%dT%H:%M:%SZ"),
        "was-paused.example": "",
        "huge.example": "?",
        "evil.example": "?",
        "fine.example": "",
    }


def test_a_health_key_that_is_not_a_hash_shows_every_host_as_unknown(redis):
    redis.set(KEYS.health, "not a hash")
    found = read_health(redis, KEYS, ["a.example", "b.example"], now=time.time())
    assert found == {"a.example": "?", "b.example": "?"}
    assert read_health(redis, KEYS, [], now=time.time()) == {}


@deferred_f_from_coro_f
async def test_a_crawl_prefix_and_hostile_counters(site, settings, redis):
    keys = CrawlKeys("other")
    evil = keys.traffic("127.0.0.2")
    redis.hset(evil, mapping={"requests": "lots", "last_fetch": "yesterday"})
    redis.zadd(
        keys.traffic_rank("requests"),
        {"127.0.0.2": 1e9, "\x1b[2Jx": 1e8, "not-a-hash": 1e7},
    )
    redis.set(keys.traffic("not-a-hash"), "a string")
    crawler = await crawl(settings(FRONTIER_KEY_PREFIX="other", DEPTH_LIMIT=1), site)
    assert crawler.stats.get_value("traffic/rejected_writes") >= 1
    result = frontier(
        "hosts", "--prefix", "other", "-s", f"REDIS_URL={redis_url(redis)}"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[:2] == ["127.0.0.2", "lots"]
    assert "yesterday" not in lines[1]  # a later fetch replaced it
    assert lines[2].startswith("\\x1b[2Jx ")
    assert lines[3].split()[:3] == ["not-a-hash", "0", "0"]
    assert "\x1b" not in result.stdout
    assert counters(redis, "127.0.0.3", keys)["requests"] == str(
        sum(hostname(row["host"]) == "127.0.0.3" for row in site.log())
    )


@deferred_f_from_coro_f
async def test_counters_are_written_while_the_crawl_runs(site, settings, redis):
    crawler = get_crawler(
        BfsSpider, settings(FRONTIER_CLOSE_WHEN_DRAINED=False, DEPTH_LIMIT=1)
    )
    done = asyncio.ensure_future(crawler.crawl_async(seeds=site.seeds[0]))
    deadline = time.monotonic() + 10
    while not redis.exists(KEYS.traffic("127.0.0.2")) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert crawler.crawling  # written by a periodic flush, not the last one
    await crawler.stop_async()
    await done
    assert int(counters(redis, "127.0.0.2")["requests"]) == sum(
        hostname(row["host"]) == "127.0.0.2" for row in site.log()
    )


@deferred_f_from_coro_f
async def test_counts_are_kept_while_redis_is_unreachable(caplog):
    crawler = get_crawler(
        BfsSpider, {"ADDONS": ADDONS, "REDIS_URL": "redis://127.0.0.1:9/0"}
    )
    middleware = TrafficMiddleware.from_crawler(crawler)
    middleware.process_request(Request("http://a.example/"))
    for _ in range(3):
        await middleware.flush()
    assert middleware.buffer.take()["a.example"].counts["requests"] == 1
    assert crawler.stats.get_value("traffic/flush_errors") == 3
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1  # the crawl's one line for a Redis outage
    assert "Redis is unreachable" in warnings[0].getMessage()
    assert "in the traffic counters" in warnings[0].getMessage()
    await crawler.signals.send_catch_log_async(signal=signals.spider_closed)


def test_frontier_hosts_with_redis_unreachable_says_so_in_one_line():
    result = frontier("hosts", "-s", "REDIS_URL=redis://127.0.0.1:9/0")
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "unreachable" in result.stderr
    assert "REDIS_URL" in result.stderr


def test_frontier_hosts_without_redis_or_crawl_data_says_so(tmp_path):
    missing = tmp_path / "none"
    result = frontier("hosts", "-s", f"FRONTIER_EMBEDDED_REDIS_DIR={missing}")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "REDIS_URL" in result.stderr
    assert not missing.exists()


@pytest.mark.parametrize(
    "args",
    [["nope"], [], ["hosts", "bfs", "extra"], ["hosts", "--top", "0"]],
)
def test_frontier_usage_errors(args):
    result = frontier(*args, "-s", "REDIS_URL=redis://127.0.0.1:9/0")
    assert result.returncode == 2


@deferred_f_from_coro_f
async def test_frontier_hosts_after_a_crawl_on_the_private_redis(
    site, settings, tmp_path
):
    directory = tmp_path / "redis"
    await crawl(
        settings(REDIS_URL="", FRONTIER_EMBEDDED_REDIS_DIR=str(directory)), site
    )
    result = frontier("hosts", "-s", f"FRONTIER_EMBEDDED_REDIS_DIR={directory}")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 + site.spec.hosts


def test_frontier_hosts_while_a_crawl_runs_on_the_private_redis(tmp_path: Path):
    server = EmbeddedRedis(tmp_path).start()  # holds the directory as a crawl does
    try:
        with server_client(server) as client:
            client.hset(KEYS.traffic("a.example"), mapping={"requests": 3})
            client.zadd(KEYS.traffic_rank("requests"), {"a.example": 3})
        result = frontier("hosts", "-s", f"FRONTIER_EMBEDDED_REDIS_DIR={tmp_path}")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[:2] == ["a.example", "3"]


def server_client(server: EmbeddedRedis) -> redis_py.Redis:
    return redis_py.Redis.from_url(server.url)


def keys_like(redis, pattern: str) -> list[bytes]:
    return list(redis.scan_iter(match=pattern, count=1000))


@deferred_f_from_coro_f
async def test_an_idle_hosts_counters_expire(site, settings, redis):
    await crawl(settings(DEPTH_LIMIT=1, TRAFFIC_IDLE_TTL=3), site)
    traffic, sites = keys_like(redis, "bfs:traffic:*"), keys_like(redis, "bfs:site:*")
    assert traffic
    assert sites
    for key in traffic + sites:
        assert 0 < redis.pttl(key) <= 3000, key
    deadline = time.monotonic() + 15
    while redis.exists(*traffic, *sites) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert not redis.exists(*traffic, *sites)


@deferred_f_from_coro_f
async def test_rankings_keep_the_top_hosts_and_drop_idle_ones(settings, redis):
    now = [1000.0]
    crawler = get_crawler(BfsSpider, settings())
    config = TrafficConfig(idle_ttl=60, rank_size=2)
    middleware = TrafficMiddleware(crawler, KEYS, config, clock=lambda: now[0])

    async def fetched(**requests: int) -> list[tuple[bytes, float]]:
        for host, count in requests.items():
            for _ in range(count):
                middleware.process_request(Request(f"http://{host}.test/"))
        await middleware.flush()
        return redis.zrevrange(KEYS.traffic_rank("requests"), 0, -1, withscores=True)

    try:
        assert await fetched(a=3, b=2, c=1) == [(b"a.test", 3.0), (b"b.test", 2.0)]
        now[0] += 30  # c's total counts on: past b's, it ranks again
        assert await fetched(c=2) == [(b"c.test", 3.0), (b"a.test", 3.0)]
        now[0] += 31  # a and b idle for 61 s: out; c (idle 31 s) stays
        assert await fetched(d=1) == [(b"c.test", 3.0), (b"d.test", 1.0)]
        assert redis.zrange(KEYS.traffic_active, 0, -1) == [b"c.test", b"d.test"]
        assert int(counters(redis, "c.test")["requests"]) == 3
        assert 0 < redis.ttl(KEYS.traffic("d.test")) <= 60
    finally:
        await crawler.signals.send_catch_log_async(signal=signals.spider_closed)
