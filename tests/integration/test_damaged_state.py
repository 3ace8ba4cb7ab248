"""Crawls of the local site over crawl state the crawler did not write: nothing stops."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.node.membership import NodeReport
from tests.integration.test_analysis import config_of, queue, worker_of
from tests.integration.test_crawl import crawl, fetched
from tests.integration.test_node_failures import run, scrapy_crawl
from tests.integration.test_nodes import SHARDS as NODE_SHARDS
from tests.integration.test_nodes import member
from tests.servers import running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    import redis as redis_py

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

PREFIX = "bfs"
SHARDS = 8  # tests/conftest.py TEST_OVERRIDES
# A pickle that would run a shell command if anything unpickled it.
PICKLE = b"\x80\x04cos\nsystem\n(S'touch /tmp/pwned-by-damaged-state'\ntR."
GARBAGE = b"\xff\xfe not ours \x00"
# Seconds a test crawl may take at most (the site crawls in a few).
CRAWL_TIMEOUT = 15


def plant_in_shards(redis: redis_py.Redis) -> None:
    """Damage every per-shard key kind: members without queues, entries without the
    sequence prefix, non-numbers, orphan and pickled leases, keys of the wrong type."""
    crawl_keys = CrawlKeys(PREFIX)
    for shard in range(SHARDS):
        keys = crawl_keys.shard(shard)
        ghost = f"ghost{shard}.invalid"
        redis.zadd(keys.ready, {ghost: 0, GARBAGE: 1})
        redis.zadd(keys.waiting, {f"w-{ghost}": 0})
        redis.hset(keys.ready_at, ghost, GARBAGE)
        redis.hset(keys.delays, ghost, "slow")
        redis.hset(keys.inflight, ghost, "many")
        redis.hset(keys.counters, "queued", "lots")
        redis.hset(keys.outstanding, "deep", GARBAGE)
        redis.hset(keys.leased, "9999", PICKLE)
        redis.zadd(keys.leases, {"9999": 0, "8888": 0})
        redis.zadd(keys.levels(f"q-{ghost}"), {"1": 1, "x": 2})
        redis.rpush(keys.queue(f"q-{ghost}", 1), PICKLE, GARBAGE)
        redis.zadd(keys.ready, {f"q-{ghost}": 5})
    wrong_types = ["sequence", "seen", "owner"]
    for shard, name in enumerate(wrong_types):
        key = getattr(crawl_keys.shard(shard), name)
        redis.delete(key)
        redis.rpush(key, PICKLE)


def plant_global(redis: redis_py.Redis) -> None:
    """Damage the crawl-wide keys: registry, control, seeds, health, traffic."""
    keys = CrawlKeys(PREFIX)
    redis.delete(keys.control, keys.seeds, keys.health)
    redis.hset(keys.nodes, mapping={"evil": PICKLE, GARBAGE: "{}"})
    redis.rpush(keys.control, PICKLE)  # a list where a hash belongs
    redis.set(keys.seeds, PICKLE)  # a string where a list belongs
    redis.rpush(keys.health, PICKLE)
    redis.set(keys.heartbeat("evil"), PICKLE)  # no TTL: no node wrote it
    redis.hset(keys.nodes, "evil2", PICKLE)  # its heartbeat looks alive, its entry not
    redis.set(keys.heartbeat("evil2"), "1", ex=3600)


def assert_crawled_everything(site: RunningSite, crawler, caplog) -> None:
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(fetched(site)) == Counter(list(expected))
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("frontier/bad_entries", 0) > 0
    warnings = Counter(r.name for r in caplog.records if "did not write" in r.message)
    assert warnings["crawler.frontier.store.crawlshards"] == 1
    assert set(warnings.values()) == {1}, warnings  # once per component
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


@deferred_f_from_coro_f
async def test_damage_planted_before_the_crawl_is_repaired(
    site, settings, redis, caplog
):
    plant_in_shards(redis)
    plant_global(redis)
    redis.hset(CrawlKeys(PREFIX).meta, "schema_version", PICKLE)  # not a version
    caplog.set_level(logging.INFO)
    crawler = await crawl(
        settings(CLOSESPIDER_TIMEOUT=CRAWL_TIMEOUT), seeds=site.seeds[0]
    )
    assert_crawled_everything(site, crawler, caplog)


def plant_mid_crawl(redis: redis_py.Redis, site: RunningSite) -> None:
    """Once pages are being fetched: the start-up damage again, then at the head of
    every queue an entry without its prefix and one with it, and a ready set of the
    wrong type (its hosts are stranded until the shard is repaired)."""
    if not wait_for(lambda: len(site.pages()) >= 10, timeout=30):
        return
    queues = list(redis.scan_iter(match=f"{PREFIX}:*:q:*"))
    # All at once (MULTI/EXEC), as one blow: planted command by command on a busy
    # machine, a repair could run between two plantings and the next script call
    # meet damage planted after it.
    damage = redis.pipeline(transaction=True)
    plant_in_shards(damage)
    plant_global(damage)
    for key in queues:
        damage.lpush(key, GARBAGE)  # no sequence prefix: set aside by the scripts
        damage.linsert(key, "AFTER", GARBAGE, b"7|" + PICKLE)  # decoded and refused
    ready = CrawlKeys(PREFIX).shard(1).ready
    damage.delete(ready)
    damage.set(ready, PICKLE)
    damage.execute()


@deferred_f_from_coro_f
async def test_damage_planted_mid_crawl_is_repaired(settings, redis, caplog):
    caplog.set_level(logging.INFO)
    with running_site(latency=0.05) as site:
        planter = threading.Thread(target=plant_mid_crawl, args=(redis, site))
        planter.start()
        started = time.monotonic()
        crawler = await crawl(
            settings(CLOSESPIDER_TIMEOUT=CRAWL_TIMEOUT), seeds=site.seeds[0]
        )
        planter.join(timeout=30)
        assert len(site.pages()) > 10, "the crawl ended before the damage was planted"
        assert time.monotonic() - started < 120
        assert_crawled_everything(site, crawler, caplog)


def plant_for_components(redis: redis_py.Redis, site: RunningSite) -> None:
    """Damage the keys of robots.txt, traffic, near-duplicates and analysis: wrong
    types, garbage records, a lock no node wrote (no expiry); and seeds that are
    not URLs."""
    keys = CrawlKeys(PREFIX)
    for index in range(site.spec.hosts):
        origin = f"http://{site.host(index)}"
        if index % 2:
            redis.rpush(keys.robots(origin), PICKLE)
        else:
            redis.set(keys.robots(origin), PICKLE)
        redis.set(keys.traffic(site.host(index).split(":")[0]), PICKLE)
        # Near-duplicates: an index of URLs and learnt rules not ours.
        host = site.host(index).split(":")[0]
        if index % 2:
            redis.set(keys.near_duplicate_urls(host), PICKLE)
            redis.set(keys.url_rules(host), PICKLE)
        else:
            redis.hset(keys.near_duplicate_urls(host), "abc", GARBAGE)
            redis.hset(
                keys.url_rules(host),
                mapping={"r:param:a=1": PICKLE, "r:segments:x:y": "9", "r:": "2"},
            )
    redis.set(keys.robots_lock(f"http://{site.host(0)}"), "not a node")
    redis.set(keys.analysis_tasks, PICKLE)
    redis.rpush(keys.traffic_rank("requests"), PICKLE)
    # Seeds that are no URLs to fetch.
    redis.rpush(keys.seeds, PICKLE, "javascript:alert(1)", "http://[::1", GARBAGE)


@deferred_f_from_coro_f
async def test_robots_traffic_and_analysis_keys_not_ours(
    site, settings, redis, tmp_path, caplog
):
    caplog.set_level(logging.INFO)
    plant_for_components(redis, site)
    values = settings(
        CLOSESPIDER_TIMEOUT=CRAWL_TIMEOUT,
        ROBOTSTXT_OBEY=True,
        ANALYSIS_ENABLED=True,
        PAGESTORE_URL=str(tmp_path / "pages"),
        ITEM_PIPELINES={
            "crawler.pipelines.pagestore.PageStorePipeline": 300,
            "crawler.analysis.pipeline.AnalysisPipeline": 500,
        },
    )
    crawler = await crawl(values, seeds=site.seeds[0])
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(fetched(site)) == Counter(list(expected))
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("robots/bad_records") >= site.spec.hosts
    robots_lines = [
        r
        for r in caplog.records
        if r.name == "crawler.robots.records" and "did not write" in r.message
    ]
    assert len(robots_lines) == 1  # three kinds of damage, one line: then counted
    assert crawler.stats.get_value("analysis/bad_records") == 1
    assert crawler.stats.get_value("analysis/queued") == len(expected)
    assert redis.type(CrawlKeys(PREFIX).analysis_tasks) == b"stream"
    assert crawler.stats.get_value("frontier/bad_seeds") >= 3
    assert crawler.stats.get_value("neardup/errors") > 0  # the keys of a wrong type
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_the_analysis_worker_replaces_streams_not_ours(redis, tmp_path):
    keys = CrawlKeys(PREFIX)
    redis.set(keys.analysis_tasks, PICKLE)
    redis.rpush(keys.analysis_dead, PICKLE)
    config = config_of(tmp_path, max_attempts=1)
    worker = worker_of(redis, config)
    worker.ensure_group()
    queue(redis, config.page_store.root, "tests.analyzers.EchoAnalyzer")
    (config.page_store.root / "page").unlink()  # the task fails: dead-lettered
    assert worker.run(idle_exit=0.0) == 1
    assert worker.bad_records == 2
    assert redis.xlen(keys.analysis_dead) == 1


@pytest.mark.parametrize(
    ("entry", "heartbeat"),
    [
        (PICKLE, {"value": "1", "ex": 3600}),  # entry not a node's, heartbeat alive
        (b'{"heartbeat": 1e300}', {"value": PICKLE}),  # heartbeat without a TTL
        (b'{"heartbeat": NaN}', {"value": "1", "ex": 3600}),
    ],
)
def test_a_registry_entry_no_node_wrote_owns_no_shards(redis, entry, heartbeat):
    keys = CrawlKeys("nodes")
    redis.hset(keys.nodes, "evil", entry)
    redis.set(keys.heartbeat("evil"), **heartbeat)
    found: list[str] = []
    node = member(redis, "good")
    node.on_damage = lambda count, what: found.append(what)
    assert node.beat(time.time(), NodeReport(pages=0)) == frozenset(range(NODE_SHARDS))
    assert found
    other = member(redis, "other")  # negative control: a real second node shares
    other.beat(time.time(), NodeReport(pages=0))
    assert node.beat(time.time(), NodeReport(pages=0)) != frozenset(range(NODE_SHARDS))


def test_owner_keys_of_the_wrong_type_are_claimed_and_released(redis):
    keys = CrawlKeys("nodes")
    for shard in range(NODE_SHARDS):
        redis.rpush(keys.shard(shard).owner, PICKLE)
    found: list[str] = []
    node = member(redis, "good")
    node.on_damage = lambda count, what: found.append(what)
    assert node.beat(time.time(), NodeReport(pages=0)) == frozenset(range(NODE_SHARDS))
    assert len(found) == NODE_SHARDS
    redis.delete(keys.shard(0).owner)
    redis.hset(keys.shard(0).owner, "not", "a string")
    redis.delete(keys.nodes)
    redis.set(keys.nodes, PICKLE)
    node.leave()  # releases the others, deletes the damaged ones
    left = [s for s in range(NODE_SHARDS) if redis.exists(keys.shard(s).owner)]
    assert left == []


def test_two_nodes_in_a_row_start_over_damaged_state(site, redis, redis_url):
    """The issue's report: a node started over damaged keys crashed, and so did every
    node after it. Each of two `scrapy crawl` processes in a row exits 0, without a
    traceback; the first fetches every page."""
    plant_in_shards(redis)
    plant_global(redis)
    command = scrapy_crawl(
        f"REDIS_URL={redis_url}",
        f"FRONTIER_SHARDS={SHARDS}",
        f"CLOSESPIDER_TIMEOUT={CRAWL_TIMEOUT}",
        seeds=site.seeds[0],
    )
    first = run(command)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Traceback" not in first.stderr
    assert "crawler did not write" in first.stderr
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(fetched(site)) == Counter(list(expected))
    plant_in_shards(redis)
    second = run(command)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Traceback" not in second.stderr
    assert "'finish_reason': 'finished'" in second.stderr
