"""The crawl's own DNS resolution against a real DNS server on a loopback port.

The test server (tests/dnsserver.py) logs every query it gets: the assertions
count what it saw, never what the resolver says it asked. Names answer 127.0.0.x,
so crawls by name reach the test site (tests/site.py), which serves each host on
its own loopback address whatever the Host header says.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import re
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
import redis.asyncio
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.context.logonce import OnceLogger
from crawler.context.outage import RedisOutage
from crawler.crawlstate.keys import CrawlKeys
from crawler.defaults import default_settings
from crawler.dns.cache import SharedAnswers
from crawler.dns.resolver import CrawlDns, CrawlResolver
from crawler.policy.dnsanswers import decode_entry
from tests.dnsserver import running_dns
from tests.integration.test_honest_exits import assert_one_line_stop
from tests.integration.test_honest_exits import scrapy_crawl as run_crawl
from tests.integration.test_timeouts import crawl as crawl_until_drained
from tests.nodes import run_nodes
from tests.servers import running_site

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.dnsserver import RunningDns

pytestmark = pytest.mark.integration

TTL = 2  # seconds: the test server's TTL of every answer
ZONE = {
    "a.crawl.test": "127.0.0.2",
    "b.crawl.test": "127.0.0.3",
    "slow.crawl.test": "127.0.0.5",  # answered after SLOW seconds
    "xn--bcher-kva.crawl.test": "127.0.0.3",  # bücher.crawl.test
}
SLOW = 0.3
# The crawled hosts 0 and 1 (Twisted hands the second to the resolver decoded,
# as bücher.crawl.test).
NAMES = ("a.crawl.test", "xn--bcher-kva.crawl.test")
KEYS = CrawlKeys("dnstest")
# Clock slack between the test server's log and the resolver's expiry.
SLACK = 0.05
logger = logging.getLogger(__name__)


@pytest.fixture
def dns() -> Iterator[RunningDns]:
    with running_dns(ZONE, ttl=TTL, slow=SLOW) as running:
        yield running


def dns_settings(dns: RunningDns, **overrides: Any) -> dict[str, Any]:
    """The DNS settings of these tests: the test server, its TTL kept as it is."""
    return {
        "DNS_SERVERS": dns.server,
        "DNS_MIN_TTL": 0,
        "DNS_TIMEOUT": 5,
        **overrides,
    }


def new_resolver(values: dict[str, Any]) -> CrawlResolver:
    """A resolver as Scrapy's crawler process builds one (only settings read)."""
    from twisted.internet import reactor  # noqa: PLC0415

    resolver = CrawlResolver.from_crawler(
        SimpleNamespace(settings=Settings({**default_settings(), **values})), reactor
    )
    assert isinstance(resolver, CrawlResolver)
    return resolver


def lend(resolver: CrawlResolver, redis_url: str) -> tuple[CrawlDns, Any]:
    """Have *resolver* share through *redis_url* and count in a crawler's stats, as
    ``DnsSharing`` does for a crawl; the crawl's part and its stats."""
    crawler = get_crawler()
    stats = crawler.stats
    shared = SharedAnswers(
        lambda: redis.asyncio.Redis.from_url(redis_url),
        KEYS,
        RedisOutage(stats).gate("the DNS test"),
        OnceLogger(logger, crawler),
        5.0,
    )
    crawl = CrawlDns(stats, shared)
    resolver.serve(crawl)
    return crawl, stats


@contextlib.contextmanager
def installed(values: dict[str, Any]) -> Iterator[CrawlResolver]:
    """The resolver installed on the running reactor, as ``scrapy crawl`` does
    (``TWISTED_DNS_RESOLVER``); the reactor's own put back afterwards."""
    from twisted.internet import reactor  # noqa: PLC0415

    before = reactor.nameResolver, reactor.resolver
    resolver = new_resolver(values)
    resolver.install_on_reactor()
    try:
        yield resolver
    finally:
        # nameResolver has no setter; installNameResolver would wrap the other.
        reactor._nameResolver, reactor.resolver = before


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@deferred_f_from_coro_f
async def test_a_name_asked_many_times_at_once_is_one_query(dns):
    resolver = new_resolver(dns_settings(dns))
    found = await asyncio.gather(
        *(resolver.addresses("slow.crawl.test") for _ in range(20))
    )
    assert found == [("127.0.0.5",)] * 20
    assert len(dns.resolver.asked("slow.crawl.test")) == 1


@deferred_f_from_coro_f
async def test_three_nodes_asking_at_once_make_one_query(dns, redis_url):
    nodes = [new_resolver(dns_settings(dns)) for _ in range(3)]
    lent = [lend(node, redis_url) for node in nodes]
    try:
        found = await asyncio.gather(
            *(node.addresses("slow.crawl.test") for node in nodes)
        )
    finally:
        for node, (crawl, _) in zip(nodes, lent, strict=True):
            node.leave(crawl)
            await crawl.shared.close()
    assert found == [("127.0.0.5",)] * 3
    assert len(dns.resolver.asked("slow.crawl.test")) == 1
    lookups = [stats.get_value("dns/lookups", 0) for _, stats in lent]
    hits = [stats.get_value("dns/cache_hits", 0) for _, stats in lent]
    assert sorted(lookups) == [0, 0, 1]
    assert sorted(hits) == [0, 1, 1]


@deferred_f_from_coro_f
async def test_an_answer_is_shared_until_its_ttl_ends(dns, redis_url, redis):
    resolver = new_resolver(dns_settings(dns))
    crawl, stats = lend(resolver, redis_url)
    try:
        assert await resolver.addresses("a.crawl.test") == ("127.0.0.2",)
        assert 0 < redis.pttl(KEYS.dns("a.crawl.test")) <= TTL * 1000
        entry = decode_entry(redis.get(KEYS.dns("a.crawl.test")))
        assert entry.addresses == ("127.0.0.2",)
        # Another node (a resolver of its own) takes the shared answer.
        other = new_resolver(dns_settings(dns))
        other_crawl, other_stats = lend(other, redis_url)
        assert await other.addresses("a.crawl.test") == ("127.0.0.2",)
        other.leave(other_crawl)
        await other_crawl.shared.close()
        assert other_stats.get_value("dns/cache_hits") == 1
        deadline = time.monotonic() + 2.5 * TTL
        while time.monotonic() < deadline:  # bounded: 2.5 TTLs of asking
            assert await resolver.addresses("a.crawl.test") == ("127.0.0.2",)
            await asyncio.sleep(0.05)
    finally:
        resolver.leave(crawl)
        await crawl.shared.close()
    asked = dns.resolver.asked("a.crawl.test")
    assert len(asked) == 3  # at 0, after one TTL, after two
    assert all(gap >= TTL - SLACK for gap in gaps(asked))
    assert stats.get_value("dns/lookups") == 3
    assert stats.get_value("dns/lookup_ms_total") >= 0
    assert stats.get_value("dns/cache_hits") > 20


@deferred_f_from_coro_f
async def test_a_missing_name_is_remembered_for_the_negative_ttl(dns, redis_url):
    resolver = new_resolver(dns_settings(dns, DNS_NEGATIVE_TTL=1))
    crawl, stats = lend(resolver, redis_url)
    try:
        assert await resolver.addresses("missing.crawl.test") == ()
        assert await resolver.addresses("missing.crawl.test") == ()
        assert len(dns.resolver.asked("missing.crawl.test")) == 1
        await asyncio.sleep(1.1)
        assert await resolver.addresses("missing.crawl.test") == ()
    finally:
        resolver.leave(crawl)
        await crawl.shared.close()
    assert len(dns.resolver.asked("missing.crawl.test")) == 2
    assert stats.get_value("dns/negative_hits") == 1


@deferred_f_from_coro_f
async def test_an_idn_host_is_asked_in_its_ascii_form(dns):
    """Twisted's HostnameEndpoint hands over an IDN host decoded."""
    resolver = new_resolver(dns_settings(dns))
    assert await resolver.addresses("bücher.crawl.test") == ("127.0.0.3",)
    assert len(dns.resolver.asked("xn--bcher-kva.crawl.test")) == 1


@deferred_f_from_coro_f
async def test_addresses_and_hosts_file_names_never_go_to_dns(dns):
    resolver = new_resolver(dns_settings(dns))
    assert await resolver.addresses("127.0.0.9") == ("127.0.0.9",)
    assert await resolver.addresses("[::1]") == ("::1",)
    assert "127.0.0.1" in await resolver.addresses("localhost")  # /etc/hosts
    assert dns.resolver.queries == []


@deferred_f_from_coro_f
async def test_a_server_that_does_not_answer_is_a_failure_not_kept(dns, redis_url):
    with running_dns({}) as silent:
        port = silent.port
    # Nothing listens on that port any more: every try goes unanswered.
    values = dns_settings(dns, DNS_SERVERS=f"127.0.0.1:{port}", DNS_TIMEOUT=0.5)
    resolver = new_resolver(values)
    crawl, stats = lend(resolver, redis_url)
    try:
        started = time.monotonic()
        assert await resolver.addresses("a.crawl.test") == ()
        assert time.monotonic() - started < 0.5 + 1.5  # bounded by DNS_TIMEOUT
    finally:
        resolver.leave(crawl)
        await crawl.shared.close()
    assert stats.get_value("dns/failures") == 1
    redis_client = redis.asyncio.Redis.from_url(redis_url)
    assert await redis_client.exists(KEYS.dns("a.crawl.test")) == 0
    await redis_client.aclose()


@deferred_f_from_coro_f
async def test_with_redis_away_names_are_resolved_directly(dns):
    resolver = new_resolver(dns_settings(dns))
    crawl, stats = lend(resolver, "redis://127.0.0.1:1")  # nothing listens there
    try:
        assert await resolver.addresses("a.crawl.test") == ("127.0.0.2",)
    finally:
        resolver.leave(crawl)
        await crawl.shared.close()
    assert len(dns.resolver.asked("a.crawl.test")) == 1
    assert stats.get_value("redis/errors") >= 1


@deferred_f_from_coro_f
async def test_an_entry_the_crawler_did_not_write_is_replaced(dns, redis_url, redis):
    redis.set(KEYS.dns("a.crawl.test"), b"\x80\x04garbage")
    redis.hset(KEYS.dns("b.crawl.test"), "not", "a string")
    resolver = new_resolver(dns_settings(dns))
    crawl, stats = lend(resolver, redis_url)
    try:
        assert await resolver.addresses("a.crawl.test") == ("127.0.0.2",)
        assert await resolver.addresses("b.crawl.test") == ("127.0.0.3",)
    finally:
        resolver.leave(crawl)
        await crawl.shared.close()
    assert stats.get_value("dns/bad_entries") == 2
    assert decode_entry(redis.get(KEYS.dns("a.crawl.test"))).addresses == ("127.0.0.2",)
    assert redis.type(KEYS.dns("b.crawl.test")) == b"string"


async def crawl(values: dict[str, Any], seeds: list[str]) -> Any:
    """Crawl from *seeds*, confined to their hosts, until the frontier is drained
    (bounded); the crawler."""
    return await crawl_until_drained(values, seeds, scope="seed-hosts")


@deferred_f_from_coro_f
async def test_a_crawl_by_name_asks_each_name_once_a_ttl(dns, settings):
    delay = 0.15  # 30 pages a host: 4.5 s, over two TTLs
    values = settings(
        **dns_settings(dns),
        POLITENESS_DAY_DELAY=delay,
        POLITENESS_NIGHT_DELAY=delay,
        # A new connection, so a resolution, for every fetch (none kept alive).
        DEFAULT_REQUEST_HEADERS={"Connection": "close"},
    )
    with running_site(hosts=2, pages=30, links=3, cross=0.0) as site, installed(values):
        seeds = [f"http://{name}:{site.spec.port}/" for name in NAMES]
        started = time.time()
        crawler = await crawl(values, seeds)
        took = time.time() - started
        pages = site.pages()
    for index in (0, 1):
        assert len([r for r in pages if r["host"] == site.host(index)]) == 30
    for name in NAMES:
        asked = dns.resolver.asked(name)
        assert 2 <= len(asked) <= math.ceil(took / TTL) + 1
        assert all(gap >= TTL - SLACK for gap in gaps(asked)), gaps(asked)
    total = sum(len(dns.resolver.asked(name)) for name in ZONE)
    assert crawler.stats.get_value("dns/lookups") == total
    # Every fetch opened a connection, and asked its name: all but those few
    # were answered without a query.
    assert crawler.stats.get_value("dns/cache_hits") >= 60 - total


@deferred_f_from_coro_f
async def test_a_name_that_does_not_exist_is_a_network_error_tried_again_later(
    dns, settings, redis
):
    values = settings(
        **dns_settings(dns, DNS_NEGATIVE_TTL=0.2),
        RETRY_TIMES=0,
        RETRY_LATER_DELAYS=[0.5],
    )
    with running_site(hosts=1, pages=2, links=1, cross=0.0) as site, installed(values):
        port = site.spec.port
        seeds = [f"http://a.crawl.test:{port}/", f"http://missing.crawl.test:{port}/"]
        crawler = await crawl(values, seeds)
    stats = crawler.stats
    assert stats.get_value("retry_later/held_count/network_error") == 1
    assert stats.get_value("retry_later/gave_up_count/network_error") == 1
    assert len(dns.resolver.asked("missing.crawl.test")) == 2  # the later try asked
    fates = sum(
        int(redis.hget(key, "fate:network_error") or 0)
        for key in redis.scan_iter(match="bfs:*:counters")
    )
    assert fates == 1


NODES = ("n1", "n2", "n3")
NODE_NAMES = {f"h{i}.crawl.test": f"127.0.0.{2 + i}" for i in range(4)}
NODE_TIMEOUT = 120.0


def test_three_nodes_crawling_by_name_ask_each_name_once_a_ttl(redis_url, tmp_path):
    """Three ``scrapy crawl`` processes, the resolver installed by Scrapy from
    TWISTED_DNS_RESOLVER (the add-on's default): the server sees each name at most
    once a TTL, and the nodes' lookups are exactly the queries it saw."""
    with (
        running_dns(NODE_NAMES, ttl=TTL) as dns_server,
        running_site(hosts=4, pages=20, links=3, cross=0.0) as site,
    ):
        port = site.spec.port
        seeds = ",".join(f"http://{name}:{port}/" for name in NODE_NAMES)
        settings = (
            f"REDIS_URL={redis_url}",
            f"DNS_SERVERS={dns_server.server}",
            "DNS_MIN_TTL=0",
            "DOWNLOAD_DELAY=0.15",  # 20 pages a host: 3 s, over a TTL
            "FRONTIER_NODE_TTL=2",
            "FRONTIER_MAINTENANCE_INTERVAL=0.3",
            "ROBOTSTXT_OBEY=False",
            'DEFAULT_REQUEST_HEADERS={"Connection": "close"}',  # a lookup a fetch
        )
        codes, outputs = run_nodes(
            NODES, settings, seeds=seeds, tmp_path=tmp_path, timeout=NODE_TIMEOUT
        )
        pages = site.pages()
    assert codes == [0, 0, 0], outputs[codes.index(max(codes))][-3000:]
    assert len({(r["host"], r["path"]) for r in pages}) == 4 * 20
    total = 0
    for name in NODE_NAMES:
        asked = dns_server.resolver.asked(name)
        total += len(asked)
        assert asked, f"{name} never asked"
        assert all(gap >= TTL - SLACK for gap in gaps(asked)), (name, gaps(asked))
    lookups = [
        int(found.group(1)) if (found := re.search(r"'dns/lookups': (\d+)", out)) else 0
        for out in outputs
    ]
    assert (
        sum(lookups) == total
    )  # every query the server saw came from a node's resolver


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"DNS_SERVERS": "dns.example"}, ["DNS_SERVERS must list IP addresses"]),
        ({"DNS_MIN_TTL": "10", "DNS_MAX_TTL": "5"}, ["DNS_MAX_TTL", "DNS_MIN_TTL"]),
        ({"DNS_CONCURRENCY": "0"}, ["DNS_CONCURRENCY must be >= 1"]),
    ],
)
def test_a_bad_dns_setting_stops_the_crawl_in_one_line(tmp_path, settings, words):
    result = run_crawl(tmp_path, "-a", "seeds=http://a.crawl.test:9/", **settings)
    assert_one_line_stop(result, "Bad setting", *words)


@deferred_f_from_coro_f
@pytest.mark.parametrize("ahead", [10.0, 0.0])
async def test_names_of_hosts_due_soon_are_resolved_before_their_fetch(
    dns, settings, ahead
):
    """A host waiting out its delay while its answer expires: with
    DNS_RESOLVE_AHEAD its name is asked again before its next fetch needs it."""
    delay = 0.3  # 20 pages a host: 6 s, three TTLs
    values = settings(
        **dns_settings(dns, DNS_RESOLVE_AHEAD=ahead),
        POLITENESS_DAY_DELAY=delay,
        POLITENESS_NIGHT_DELAY=delay,
        POLITENESS_JITTER=0,
    )
    with running_site(hosts=2, pages=20, links=3, cross=0.0) as site, installed(values):
        seeds = [f"http://{name}:{site.spec.port}/" for name in NAMES]
        crawler = await crawl(values, seeds)
        assert len(site.pages()) == 40
    resolved_ahead = crawler.stats.get_value("dns/resolved_ahead", 0)
    if ahead:
        assert resolved_ahead >= 2
    else:
        assert resolved_ahead == 0
    for name in NAMES:
        asked = dns.resolver.asked(name)
        assert all(gap >= TTL - SLACK for gap in gaps(asked)), gaps(asked)
