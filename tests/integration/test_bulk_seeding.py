"""Bulk seeding (issue 27): `scrapy frontier seed --file` pushes a large file, and a
running node's intake queues far more than 1000 seeds in one maintenance round,
each URL once, duplicates refused, bad entries counted
(crawler/frontier/node/seedintake.py). Plain-URL seeds take the bulk path (no
Request a seed: ``Exchange.enqueue_plain_seeds``), which must queue what the Request
path queues, under the same admission rules."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
import redis as redis_py
from scrapy import Request
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.encoding import codec
from crawler.frontier.encoding.plainurl import get_fingerprint, request_url
from crawler.frontier.node.seedintake import SEEDS_PER_BATCH
from crawler.frontier.scheduler import FrontierScheduler
from crawler.meta import REVIVE
from crawler.policy.hosts import host_of
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_frontier_commands import frontier
from tests.servers import RestartableRedis
from tests.standin import standin_engine

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
URLS = 6000  # six of the old 1000-a-round batches
HOSTS = 300


def queued(redis) -> int:
    """Requests queued over the crawl's shards, read from their counters."""
    return sum(
        int(redis.hget(key, "queued") or 0)
        for key in redis.scan_iter(match="bfs:{s*}:counters", count=1000)
    )


def opened_scheduler(settings, **overrides) -> tuple[FrontierScheduler, Crawler]:
    """The real scheduler opened without an engine that fetches (nothing is)."""
    crawler = standin_engine(
        get_crawler(
            BfsSpider,
            settings(
                FRONTIER_MAINTENANCE_INTERVAL=5.0,
                FRONTIER_LEASE_TIMEOUT=60.0,
                BFS_SCOPE="seed-hosts",
                **overrides,
            ),
        )
    )
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler, crawler


def test_one_round_takes_a_large_seed_file_each_url_once(
    redis, redis_url, settings, tmp_path: Path
):
    urls = [f"http://h{i % HOSTS}.test/p/{i // HOSTS}" for i in range(URLS)]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(urls + urls[:500]) + "\n", encoding="utf-8")
    result = frontier(redis_url, "seed", "--file", str(seeds))
    assert result.returncode == 0, result.stderr
    assert redis.llen(KEYS.seeds) == URLS + 500
    redis.rpush(KEYS.seeds, b"\xff\xfe", "{not json")
    scheduler, crawler = opened_scheduler(settings)
    try:
        # Opening ran the first heartbeat's round (1000 at most before issue 27);
        # one more must find nothing left of the 6502.
        scheduler._open._runtime._take_seeds()  # type: ignore[union-attr]
        assert redis.llen(KEYS.seeds) == 0
    finally:
        scheduler.close("finished")
    assert queued(redis) == URLS
    assert crawler.stats.get_value("frontier/bad_seeds") == 2


# Seeds in the forms a Request changes or a fingerprint canonicalises: case, query
# order, a fragment, an IDN host and a path to escape, a port, no path at all; and
# forms kept as they are (plainurl.as_is: the bulk path's quick entry and
# fingerprint), over https and with a port too, and a dot segment, which is not.
SEED_FORMS = [
    "http://h1.test/p/1",
    "https://h1.test/",
    "https://h2.test:8443/p/a-b_c~d(e)",
    "http://h1.test/a/./b",
    "http://H1.Test/a?b=1&a=2#frag",
    "http://münchen.test/ä b?q=ü",
    "https://h2.test:8443/x/%7ey?q=a%20b",
    "http://h3.test",
]
# DEPTH_LIMIT and per-site rules (a depth limit, deepest first) the bulk path
# applies as Admission.admit does; exact dedup and depth repair change the fields.
VARIANTS = [
    {},
    {
        "DEPTH_LIMIT": 1,
        "FRONTIER_DEDUP": "exact",
        "FRONTIER_BFS_LOOKAHEAD": 1,
        "FRONTIER_DEPTH_REPAIR": True,
        "FRONTIER_SITE_STRATEGY": {"h2.test": "dfs", "h3.test": "bfs:2"},
    },
]


@pytest.mark.parametrize("overrides", VARIANTS)
def test_a_plain_seed_is_admitted_as_its_request_would_be(
    redis_url, settings, overrides
):
    scheduler, crawler = opened_scheduler(settings, **overrides)
    try:
        admission = scheduler._open._exchange._admission  # type: ignore[union-attr]
        assert admission.takes_plain_seeds
        entry_of = codec.plain_get_entries(crawler.spider, {REVIVE: True})
        for url in SEED_FORMS:
            request = Request(url, meta={REVIVE: True})
            safe = request_url(url)
            assert safe == request.url
            fingerprint = get_fingerprint(safe)
            assert fingerprint == crawler.request_fingerprinter.fingerprint(
                Request(url)
            )
            host = host_of(safe)
            assert entry_of(safe, host) == codec.encode(request, crawler.spider, host)
            bulk = admission.admit_plain_seed(safe, fingerprint, entry_of)
            assert bulk is not None
            assert bulk == admission.admit(request)  # shard, host, level, dedup...
    finally:
        scheduler.close("finished")


def test_a_bad_url_is_refused_and_counted_on_both_paths(redis_url, settings):
    scheduler, crawler = opened_scheduler(settings)
    try:
        admission = scheduler._open._exchange._admission  # type: ignore[union-attr]
        url = "http:///no-host"
        fingerprint = get_fingerprint(url)
        assert admission.admit_plain_seed(url, fingerprint, lambda u, h: "[]") is None
        assert crawler.stats.get_value("frontier/bad_urls") == 1
        assert admission.admit(Request(url, meta={REVIVE: True})) is None
        assert crawler.stats.get_value("frontier/bad_urls") == 2
    finally:
        scheduler.close("finished")


def queue_contents(redis) -> dict[bytes, list[bytes]]:
    """Every list the crawl keeps (the hosts' queues), and the shards' counts of
    requests queued: what a path queued, and where."""
    contents = {
        key: redis.lrange(key, 0, -1)
        for key in redis.scan_iter(match="bfs:*", count=1000)
        if redis.type(key) == b"list"
    }
    for key in redis.scan_iter(match="bfs:{s*}:counters", count=1000):
        contents[key] = [redis.hget(key, "queued") or b"0"]
    return contents


def intake(redis, settings, entries: list[str | bytes], *, bulk: bool):
    """Queue *entries* as a node's seed intake does: the bulk path for plain URLs,
    or a Request a seed; the crawl's lists and counts, and the crawler's stats."""
    redis.flushdb()
    scheduler, crawler = opened_scheduler(settings)
    try:
        seeds = scheduler._open._runtime._seeds  # type: ignore[union-attr]
        if not bulk:
            seeds._enqueue_urls = None
        redis.rpush(KEYS.seeds, *entries)
        scheduler._open._runtime._take_seeds()  # type: ignore[union-attr]
        assert redis.llen(KEYS.seeds) == 0
    finally:
        scheduler.close("finished")
    return queue_contents(redis), crawler.stats.get_stats()


def test_the_bulk_path_queues_what_the_request_path_queues(redis, settings):
    urls = [f"http://h{i % 7}.test/p/{i // 7}" for i in range(300)] + SEED_FORMS
    entries: list[str | bytes] = [
        *urls,
        *urls[:50],  # each queued once
        "http://h1.test:99999/",  # a port Request refuses: a bad seed
        "http://" + "a" * 64 + ".test/",  # a label DNS refuses: a bad seed
        "  http://h1.test/spaced \t",  # as a seed file's line may be
        "ftp://h1.test/",
        '{"url": "http://h9.test/j", "meta": {"k": 1}}',  # the Request path
    ]
    bulk, bulk_stats = intake(redis, settings, entries, bulk=True)
    one_by_one, stats = intake(redis, settings, entries, bulk=False)
    assert bulk == one_by_one
    assert sum(int(v[0]) for k, v in bulk.items() if k.endswith(b":counters")) == (
        len(set(urls)) + 2
    )
    for stats_of in (bulk_stats, stats):
        assert stats_of.get("frontier/bad_seeds") == 3
        assert stats_of.get("frontier/duplicates") == len(urls) + 50 - len(set(urls))


def test_in_importance_order_plain_seeds_take_the_request_path(redis, settings):
    scheduler, _crawler = opened_scheduler(
        settings, FRONTIER_ORDER="importance", FRONTIER_BFS_LOOKAHEAD=-1
    )
    try:
        exchange = scheduler._open._exchange  # type: ignore[union-attr]
        assert not exchange._plain_seeds  # its fields are the request's
        urls = [f"http://h{i % 3}.test/p/{i}" for i in range(30)]
        redis.rpush(KEYS.seeds, *urls, *urls[:5])
        scheduler._open._runtime._take_seeds()  # type: ignore[union-attr]
        assert redis.llen(KEYS.seeds) == 0
    finally:
        scheduler.close("finished")
    assert queued(redis) == len(urls)


def test_a_batch_whose_write_fails_is_written_once_redis_is_back(settings, tmp_path):
    """Bulk seeding writes a batch while it admits the next (``write_behind``): a
    write that fails (Redis stopped) puts its batch back, and the next write after
    Redis returns queues every URL once."""
    server = RestartableRedis(tmp_path / "redis")
    server.start()
    urls = [f"http://h{i % 7}.test/p/{i}" for i in range(200)]
    try:
        scheduler, _crawler = opened_scheduler(settings, REDIS_URL=server.url)
        exchange = scheduler._open._exchange  # type: ignore[union-attr]
        try:
            assert exchange.enqueue_plain_seeds(urls[:100]) == 100
            server.stop()
            exchange.write_behind(time.time())  # under way, and failing
            assert exchange.buffered == 100  # still unwritten, as far as anyone knows
            assert exchange.enqueue_plain_seeds(urls[100:]) == 100
            with pytest.raises(redis_py.ConnectionError):
                exchange.write_behind(time.time())
            assert exchange.buffered == 200  # the failed batch is back
            server.start()
            exchange.write_behind(time.time())
            exchange.write_pending(time.time())  # finishes the write under way
            assert exchange.buffered == 0
        finally:
            scheduler.close("finished")
        client = redis_py.Redis.from_url(server.url)
        try:
            assert queued(client) == len(urls)
        finally:
            client.close()
    finally:
        server.stop()


def test_a_batch_popped_before_a_failed_write_is_kept(redis, settings):
    """The intake pops the next batch before this one's write starts; when that
    write (finishing the one before) raises, the popped batch waits in the buffer
    instead of being lost. The failure is raised once the real write has started,
    since a Redis that fails between the pop and the write cannot be timed."""
    urls = [f"http://h{i % 7}.test/p/{i}" for i in range(2 * SEEDS_PER_BATCH + 10)]
    scheduler, _crawler = opened_scheduler(settings)
    try:
        redis.rpush(KEYS.seeds, *urls)  # after the round run as it opened
        opened = scheduler._open  # type: ignore[union-attr]
        runtime, exchange = opened._runtime, opened._exchange
        intake = runtime._seeds
        write = intake._flush
        calls = []

        def failing_once() -> None:
            write()
            calls.append(1)
            if len(calls) == 1:
                raise redis_py.ConnectionError("the write of the batch before failed")

        intake._flush = failing_once
        with pytest.raises(redis_py.ConnectionError):
            intake.take(runtime._shards)
        assert redis.llen(KEYS.seeds) == 10  # two batches popped
        assert exchange.buffered == 2 * SEEDS_PER_BATCH  # both still to be queued
        exchange.write_pending(time.time())
        assert queued(redis) == 2 * SEEDS_PER_BATCH
    finally:
        scheduler.close("finished")
