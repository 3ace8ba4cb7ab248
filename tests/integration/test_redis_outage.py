"""Redis goes away mid-crawl and comes back: the crawl waits, then ends by itself."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
import redis as redis_py
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.middlewares.hosthealth import HostRecords
from crawler.policy.robotsfetch import Fetch, RobotsConfig, record_after
from crawler.policy.tiers import HostHealth
from crawler.robots.middleware import RobotsMiddleware
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_node_failures import page_fetches
from tests.servers import ROOT, RestartableRedis, running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    from scrapy.crawler import Crawler

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

# Bound on a whole crawl, outage included.
CRAWL_TIMEOUT = 60
OUTAGE_SECONDS = 8.0
HOSTS = 4
# Requests in flight at once: one per host (FRONTIER_HOST_CONCURRENCY's default),
# the most an outage may make the crawl fetch twice.
IN_FLIGHT = HOSTS
OUTAGE_LOGGER = "[crawler.context.outage]"


def crawl_command(
    site: RunningSite, redis_url: str, extra: Sequence[str] = ()
) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    for setting in (
        f"REDIS_URL={redis_url}",
        "TELNETCONSOLE_ENABLED=False",
        "POLITENESS_DAY_DELAY=0.15",
        "POLITENESS_NIGHT_DELAY=0.15",
        "POLITENESS_JITTER=0",
        "PAGESTORE_URL=",
        "RECORDS_DATABASE_URL=",
        "FRONTIER_MAINTENANCE_INTERVAL=0.5",
        # Shorter than the outage: the node's heartbeat and shard owner keys expire
        # while Redis is away, and it must claim its shards again.
        "FRONTIER_NODE_TTL=3",
        # Longer than the outage: a lease whose pop reply was lost as Redis stopped
        # comes back in bounded time, and no lease of a page in flight expires.
        "FRONTIER_LEASE_TIMEOUT=15",
        *extra,
    ):
        command += ["-s", setting]
    return [*command, "-a", "scope=seed-hosts", "-a", f"seeds={','.join(site.seeds)}"]


def crawl_through(
    tmp_path: Path,
    fault: Callable[[RestartableRedis, RunningSite], None],
    extra: Sequence[str] = (),
) -> tuple[subprocess.CompletedProcess[str], int, int]:
    """Crawl the site (with the *extra* settings) while *fault* happens to its Redis
    once a third of the pages are fetched; the finished crawl, the pages fetched
    twice, and missing pages."""
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        with running_site(hosts=HOSTS, pages=40, links=4, latency=0.05) as site:
            crawler = subprocess.Popen(
                crawl_command(site, server.url, extra),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            reachable = bfs_depths(site.spec, [(i, 0) for i in range(HOSTS)])
            try:
                assert wait_for(lambda: len(site.pages()) >= len(reachable) // 3, 30)
                fault(server, site)
                _, stderr = crawler.communicate(timeout=CRAWL_TIMEOUT)
            finally:
                if crawler.poll() is None:
                    crawler.kill()
                    crawler.communicate()
            fetches = page_fetches(site)
    finally:
        server.stop()
    result = subprocess.CompletedProcess(crawler.args, crawler.returncode, "", stderr)
    missing = len(set(reachable) - set(fetches))
    return result, sum(count - 1 for count in fetches.values()), missing


def outage_lines(stderr: str, level: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"{OUTAGE_LOGGER} {level}:" in line]


def redis_complaints(stderr: str) -> list[str]:
    """WARNING and ERROR lines about Redis or connections, the tracker's aside."""
    pattern = re.compile(r"redis|connection", re.IGNORECASE)
    return [
        line
        for line in stderr.splitlines()
        if re.search(r"\] (WARNING|ERROR|CRITICAL):", line)
        and pattern.search(line)
        and OUTAGE_LOGGER not in line
    ]


def restart(server: RestartableRedis, site: RunningSite) -> None:
    """Stop Redis for OUTAGE_SECONDS, then start it again on its data."""
    server.stop()
    stopped_at = len(site.pages())
    time.sleep(OUTAGE_SECONDS)  # the outage itself
    # Nothing new is fetched without Redis: at most what was in flight.
    assert len(site.pages()) - stopped_at <= IN_FLIGHT
    server.start()  # same port, same append-only file


def test_a_crawl_waits_out_a_redis_restart_and_finishes(tmp_path):
    result, refetched, missing = crawl_through(tmp_path, restart)
    assert result.returncode == 0, result.stderr[-3000:]
    assert missing == 0, result.stderr[-3000:]
    assert refetched <= IN_FLIGHT
    warnings = outage_lines(result.stderr, "WARNING")
    assert len(warnings) == 1, result.stderr[-3000:]
    assert "Redis is unreachable" in warnings[0]
    infos = outage_lines(result.stderr, "INFO")
    assert len(infos) == 1, result.stderr[-3000:]
    assert re.search(r"after \d+\.\ds away", infos[0])  # says how long it lasted
    assert redis_complaints(result.stderr) == []
    assert "Traceback" not in result.stderr
    assert "'redis/outages': 1" in result.stderr  # the stats dump


def test_a_crawl_rides_out_its_redis_connections_being_killed(tmp_path):
    def kill_connections(server: RestartableRedis, site: RunningSite) -> None:
        client = redis_py.Redis.from_url(server.url)
        killed = 0
        try:
            for _round in range(10):  # over 3 s of crawling
                killed += client.client_kill_filter(_type="normal")
                time.sleep(0.3)
        finally:
            client.close()
        assert killed >= 3  # the crawler's connections were there to kill

    result, refetched, missing = crawl_through(tmp_path, kill_connections)
    assert result.returncode == 0, result.stderr[-3000:]
    assert missing == 0, result.stderr[-3000:]
    assert refetched <= IN_FLIGHT
    # A killed connection is usually reopened at once by the client, with no outage
    # to report; if one is, it is reported once each way.
    warnings = outage_lines(result.stderr, "WARNING")
    assert len(warnings) <= 1, result.stderr[-3000:]
    assert len(outage_lines(result.stderr, "INFO")) == len(warnings)
    assert redis_complaints(result.stderr) == []
    assert "Traceback" not in result.stderr


def test_a_crawl_stopped_while_redis_is_away_closes_and_a_rerun_finishes(tmp_path):
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        # Slow pages: requests are in flight when Redis stops, and their links and
        # acknowledgements cannot be written when the node closes.
        with running_site(hosts=HOSTS, pages=20, links=4, latency=0.5) as site:
            command = crawl_command(site, server.url)
            crawler = subprocess.Popen(
                command, cwd=ROOT, stderr=subprocess.PIPE, text=True
            )
            reachable = bfs_depths(site.spec, [(i, 0) for i in range(HOSTS)])
            try:
                assert wait_for(lambda: len(site.pages()) >= 2 * HOSTS, 30)
                time.sleep(0.3)  # the next requests are on their way (0.5 s each)
                server.stop()
                time.sleep(2.0)  # the node finds Redis gone, its requests finish
                crawler.send_signal(signal.SIGINT)  # Ctrl-C: a graceful stop
                _, stderr = crawler.communicate(timeout=30)
            finally:
                if crawler.poll() is None:
                    crawler.kill()
                    crawler.communicate()
            assert crawler.returncode == 0, stderr[-3000:]
            assert "Closed while Redis is unreachable" in stderr
            assert "Traceback" not in stderr
            assert len(site.pages()) < len(reachable)  # stopped mid-crawl

            server.start()  # the same append-only file
            rerun = subprocess.run(
                command,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=CRAWL_TIMEOUT,
                check=False,
            )
            fetches = page_fetches(site)
    finally:
        server.stop()
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert set(fetches) == set(reachable)  # nothing the first run found is lost
    assert sum(count - 1 for count in fetches.values()) <= IN_FLIGHT


def component_crawler(settings: Any, server: RestartableRedis) -> Crawler:
    crawler = get_crawler(
        BfsSpider, settings(REDIS_URL=server.url, ROBOTSTXT_OBEY=True)
    )
    crawler.spider = crawler._create_spider()  # components read its name
    return crawler


@deferred_f_from_coro_f
async def test_a_robots_lookup_waits_for_redis_instead_of_failing(
    settings, restartable
):
    crawler = component_crawler(settings, restartable)
    middleware = RobotsMiddleware.from_crawler(crawler)
    origin = "http://127.0.0.2:9"  # nothing listens: only the record in Redis
    record = record_after(
        RobotsConfig.from_settings(crawler.settings),
        Fetch("parse", 200, "User-agent: *\nDisallow: /private\n"),
        now=time.time(),
    )
    writer = redis_py.Redis.from_url(restartable.url)
    writer.set(CrawlKeys("bfs").robots(origin), record.to_json(), ex=3600)
    writer.close()
    restartable.stop()
    try:
        lookup = asyncio.ensure_future(middleware.process_request(Request(origin)))
        await asyncio.sleep(2.0)
        assert not lookup.done()  # waiting for Redis, not failed
        restartable.start()
        assert await asyncio.wait_for(lookup, timeout=15) is None  # allowed
        with pytest.raises(IgnoreRequest):  # the rules came from Redis
            await middleware.process_request(Request(f"{origin}/private/1"))
    finally:
        await crawler.signals.send_catch_log_async(signals.spider_closed)
    assert crawler.stats.get_value("redis/outages") == 1


def test_host_records_are_kept_while_redis_is_away_and_written_back(
    settings, restartable
):
    records = HostRecords(component_crawler(settings, restartable))
    slow = HostHealth(slow=True, successes=1)
    records.put("127.0.0.2", HostHealth())
    restartable.stop()
    records.put("127.0.0.2", slow)  # does not raise: kept for later
    assert records.get("127.0.0.2") == slow
    assert records.get("127.0.0.3") == HostHealth()  # unknown: a healthy host
    restartable.start()
    reader = redis_py.Redis.from_url(restartable.url)
    key = CrawlKeys("bfs").health

    def written() -> bool:
        records.put("127.0.0.4", HostHealth())  # a write tries the unwritten too
        return reader.hget(key, "127.0.0.2") == slow.to_json().encode()

    try:
        assert wait_for(written, timeout=15, interval=0.2)
    finally:
        reader.close()
