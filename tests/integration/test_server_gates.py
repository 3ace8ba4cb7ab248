"""Politeness per server (``POLITENESS_KEY = ip``): names that share an address
share its delay and one request in flight, on one node and across three.

A real DNS server (tests/dnsserver.py) answers four names with 127.0.0.2 and four
with 127.0.0.3; the test site serves every name's pages on its address, whatever the
Host header, and logs when each request arrived there. The gaps are measured at the
site, robots.txt fetches included.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

import pytest
from redis.asyncio import Redis as AsyncRedis
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.servergates import Busy, Release, ServerGates
from tests.dnsserver import running_dns
from tests.integration.test_dns import installed
from tests.integration.test_honest_exits import assert_one_line_stop
from tests.integration.test_honest_exits import scrapy_crawl as run_crawl
from tests.integration.test_timeouts import crawl, gaps
from tests.nodes import run_nodes
from tests.servers import running_site

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

DELAY = 0.4
# Names 0-3 answer the site's first address, 4-7 its second.
ZONE = {f"n{i}.crawl.test": f"127.0.0.{2 + i // 4}" for i in range(8)}
PAGES = 5
# What the site's clock may be off the crawler's by, between two arrivals.
SLACK = 0.01
NODE_TIMEOUT = 120.0
# Enough pages that the crawl outlasts a loaded machine's staggered node start-ups
# (four names an address, 16 requests each: some 26 s a gate).
NODE_PAGES = 15


def polite(**overrides: Any) -> dict[str, Any]:
    """One fixed delay a host (no jitter, day or night), the back-off off."""
    return {
        "POLITENESS_DAY_DELAY": DELAY,
        "POLITENESS_NIGHT_DELAY": DELAY,
        "POLITENESS_JITTER": 0,
        "POLITENESS_BACKOFF": False,
        "DNS_MIN_TTL": 0,
        **overrides,
    }


def arrivals_by_address(site: RunningSite) -> dict[str, list[float]]:
    """When each request (robots.txt included) reached each of the site's addresses."""
    times: dict[str, list[float]] = {}
    for row in site.log():
        times.setdefault(row["host"], []).append(row["t"])
    return {address: sorted(found) for address, found in times.items()}


def seeds_of(site: RunningSite) -> list[str]:
    return [f"http://{name}:{site.spec.port}/" for name in ZONE]


@deferred_f_from_coro_f
async def test_names_on_one_address_share_its_delay(settings):
    with (
        running_dns(ZONE, ttl=30) as dns,
        running_site(hosts=2, pages=PAGES, links=2, cross=0.0) as site,
    ):
        values = settings(
            **polite(DNS_SERVERS=dns.server, POLITENESS_KEY="ip", ROBOTSTXT_OBEY=True)
        )
        with installed(values):
            crawler = await crawl(values, seeds_of(site), scope="seed-hosts")
        pages = site.pages()
        by_address = arrivals_by_address(site)
    # Every name's pages were fetched once: the gate held requests back, lost none.
    assert len(pages) == len(ZONE) * PAGES
    for address, times in by_address.items():
        assert len(times) == 4 * (PAGES + 1), address  # pages and robots.txt
        assert min(gaps(times)) >= DELAY - SLACK, (address, sorted(gaps(times))[:3])
    assert crawler.stats.get_value("politeness/server_busy") > 0


@deferred_f_from_coro_f
async def test_per_host_the_same_names_come_closer_than_the_delay(settings):
    """The control: per host name, four names on one address get four times its rate."""
    with (
        running_dns(ZONE, ttl=30) as dns,
        running_site(hosts=2, pages=PAGES, links=2, cross=0.0) as site,
    ):
        values = settings(**polite(DNS_SERVERS=dns.server, POLITENESS_KEY="host"))
        with installed(values):
            crawler = await crawl(values, seeds_of(site), scope="seed-hosts")
        by_address = arrivals_by_address(site)
    assert all(min(gaps(times)) < DELAY / 2 for times in by_address.values())
    assert crawler.stats.get_value("politeness/server_busy") is None


def test_three_nodes_never_come_closer_than_the_delay_to_an_address(
    redis_url, tmp_path
):
    with (
        running_dns(ZONE, ttl=30) as dns,
        running_site(hosts=2, pages=NODE_PAGES, links=2, cross=0.0) as site,
    ):
        settings = [f"{name}={value}" for name, value in polite().items()]
        settings += [
            f"REDIS_URL={redis_url}",
            f"DNS_SERVERS={dns.server}",
            "POLITENESS_KEY=ip",
            "FRONTIER_NODE_TTL=2",
            "FRONTIER_MAINTENANCE_INTERVAL=0.3",
            # The weighted homes of n1-n3 put all seven shards of the eight names on
            # n3; round-robin spreads each address's names over the three nodes.
            "FRONTIER_DISPATCH=round-robin",
        ]
        codes, outputs = run_nodes(
            ("n1", "n2", "n3"),
            settings,
            seeds=",".join(seeds_of(site)),
            tmp_path=tmp_path,
            timeout=NODE_TIMEOUT,
        )
        pages = site.pages()
        by_address = arrivals_by_address(site)
    assert codes == [0, 0, 0], outputs[codes.index(max(codes))][-3000:]
    assert len(pages) == len(ZONE) * NODE_PAGES
    for address, times in by_address.items():
        assert min(gaps(times)) >= DELAY - SLACK, (address, sorted(gaps(times))[:3])
    # More than one node fetched, and the gates held some requests back.
    fetched = [re.search(r"'downloader/response_count': (\d+)", out) for out in outputs]
    assert sum(found is not None and int(found.group(1)) > 0 for found in fetched) >= 2
    assert any("'politeness/server_busy'" in output for output in outputs)


def test_a_bad_politeness_key_stops_the_crawl_in_one_line(tmp_path):
    result = run_crawl(
        tmp_path, "-a", "seeds=http://127.0.0.2:9/", POLITENESS_KEY="isp"
    )
    assert_one_line_stop(result, "Bad setting", "POLITENESS_KEY must be one of")


# --- the gate in Redis ----------------------------------------------------------------

KEYS = CrawlKeys("gatetest")
GATES = ServerGates(KEYS)


@deferred_f_from_coro_f
async def test_a_gate_holds_one_lease_then_its_delay(redis_url, redis):
    client = AsyncRedis.from_url(redis_url)
    try:
        now = time.time()
        take = GATES.take
        assert (
            await take(client, "10.0.0.1", holder="0:1", now=now, expiry=now + 60)
            is None
        )
        # Taken again by its own lease; refused to another while in flight.
        assert (
            await take(client, "10.0.0.1", holder="0:1", now=now, expiry=now + 60)
            is None
        )
        assert await take(
            client, "10.0.0.1", holder="0:2", now=now, expiry=now + 60
        ) == Busy(in_flight=True, free_at=None)
        # Another server has its own gate.
        assert (
            await take(client, "10.0.0.2", holder="0:2", now=now, expiry=now + 60)
            is None
        )
        # Handed back by another lease: left alone. By its holder: free after the delay.
        GATES.release(redis, [Release("10.0.0.1", "0:9", now + 0.3)])
        assert await take(
            client, "10.0.0.1", holder="0:2", now=now, expiry=now + 60
        ) == Busy(in_flight=True, free_at=None)
        GATES.release(redis, [Release("10.0.0.1", "0:1", now + 0.3)])
        busy = await take(client, "10.0.0.1", holder="0:2", now=now, expiry=now + 60)
        assert busy is not None
        assert not busy.in_flight
        assert busy.free_at == pytest.approx(now + 0.3, abs=0.001)
        await asyncio.sleep(max(0.0, now + 0.35 - time.time()))
        later = time.time()
        assert (
            await take(client, "10.0.0.1", holder="0:2", now=later, expiry=later + 60)
            is None
        )
    finally:
        await client.aclose()


@deferred_f_from_coro_f
async def test_a_gate_whose_holder_died_frees_itself_when_the_lease_would_expire(
    redis_url, redis
):
    client = AsyncRedis.from_url(redis_url)
    try:
        now = time.time()
        take = GATES.take
        assert (
            await take(client, "10.0.0.1", holder="0:1", now=now, expiry=now + 0.2)
            is None
        )
        assert 0 < redis.pttl(KEYS.server_gate("10.0.0.1")) <= 200
        await asyncio.sleep(0.25)
        later = time.time()
        assert (
            await take(client, "10.0.0.1", holder="0:2", now=later, expiry=later + 60)
            is None
        )
    finally:
        await client.aclose()


@deferred_f_from_coro_f
async def test_a_gate_value_the_crawler_did_not_write_is_taken_over(redis_url, redis):
    redis.set(KEYS.server_gate("10.0.0.1"), "not a gate")
    client = AsyncRedis.from_url(redis_url)
    try:
        now = time.time()
        assert (
            await GATES.take(client, "10.0.0.1", holder="0:1", now=now, expiry=now + 60)
            is None
        )
    finally:
        await client.aclose()
