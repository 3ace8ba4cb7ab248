"""FRONTIER_SPILL on a real Redis and real databases: entries past a queue's head
wait in the spill table and come back in order, once, whatever stopped in between;
whole crawls fetch every page once, breadth-first."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections import Counter
from typing import TYPE_CHECKING, Any, cast

import pytest
import redis as redis_py
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.spill.spill import Spill, SpillCounts, spilled_row
from crawler.frontier.spill.table import SpillTable
from crawler.frontier.spill.worker import SpillWorker
from crawler.frontier.store.crawlshards import SchemaMismatchError
from crawler.frontier.store.scriptargs import common_args
from crawler.frontier.store.scripts import Call, script_runner
from crawler.frontier.store.store import FrontierStore, PopOrder
from crawler.policy.order import level_of
from tests.integration.test_crawl import crawl, fetched, late_shallow_pages
from tests.integration.test_frontier_scripts import NODE, T0, make_store, pending
from tests.integration.test_node_failures import (
    kill_and_resume,
    page_fetches,
    run,
    scrapy_crawl,
)
from tests.integration.test_redis_outage import IN_FLIGHT, crawl_through, restart
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

HEAD = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def spill_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh spill database of each kind: a SQLite file, a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/spill.db"
    return str(request.getfixturevalue("postgres_url"))


def spilling_store(redis: redis_py.Redis, url: str) -> FrontierStore:
    return make_store(
        redis,
        FRONTIER_SPILL=True,
        FRONTIER_SPILL_HEAD=HEAD,
        FRONTIER_SPILL_DATABASE_URL=url,
    )


@pytest.fixture
def spill_of(redis: redis_py.Redis) -> Iterator[Callable[[FrontierStore, str], Spill]]:
    """``spill_of(store, url)``: a spill of *store*'s crawl to the database at
    *url*, closed after the test."""
    tables: list[SpillTable] = []

    def make(store: FrontierStore, url: str) -> Spill:
        tables.append(SpillTable(url, store.shards.config.prefix).open())
        return Spill(redis, script_runner(redis), tables[-1], store.shards.config)

    yield make
    for table in tables:
        table.close()


def table_of(spill: Spill) -> SpillTable:
    return spill._table


def queue_class_of(redis: redis_py.Redis, store: FrontierStore, host: str) -> int:
    """The class of *host*'s first queue (its level and priority band)."""
    (found,) = cast(
        "list[bytes]", redis.zrange(store.shards.keys[0].levels(host), 0, 0)
    )
    return int(found)


def name_of(entry: bytes) -> str:
    """The name ``pending`` gave a popped entry."""
    return entry.decode().split('"u":"')[1].rstrip('"}')


def drain(store: FrontierStore, spill: Spill) -> list[str]:
    """Pop and ack every request, running a spill round whenever none is ready
    (bounded); the names in the order they came out."""
    names: list[str] = []
    for _ in range(500):
        popped = store.pop(PopOrder(0, NODE, 0.0, deepest_level=None), T0)
        if popped is None:
            counts = spill.round(0)
            if not (counts.written or counts.brought_back):
                break
            store.promote([0], T0)
            continue
        lease, entry = popped
        names.append(name_of(entry))
        store.flush([], [(lease, 0.0)], T0)
    return names


def test_entries_past_the_head_wait_in_the_database_and_come_back_in_order(
    redis, spill_url, spill_of
):
    store = spilling_store(redis, spill_url)
    keys = store.shards.keys[0]
    names = [f"a{i:02d}" for i in range(20)]
    store.flush([pending("a", 1, n) for n in names], [], T0)
    assert redis.llen(keys.queue("a", queue_class_of(redis, store, "a"))) == HEAD
    assert redis.llen(keys.spill_out) == 20 - HEAD
    spill = spill_of(store, spill_url)
    assert spill.write_out(0).written == 20 - HEAD
    assert redis.llen(keys.spill_out) == 0
    assert table_of(spill).count() == 20 - HEAD
    assert drain(store, spill) == names
    assert table_of(spill).count() == 0
    assert not redis.exists(keys.spill, keys.spill_out, keys.spill_wanted)
    assert store.shards.totals() == (0, 0)


def test_a_queue_that_spilled_takes_new_entries_behind_the_spilled_ones(
    redis, tmp_path, spill_of
):
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    first = [f"a{i:02d}" for i in range(8)]
    store.flush([pending("a", 1, n) for n in first], [], T0)
    spill.write_out(0)
    later = [f"b{i:02d}" for i in range(4)]  # queued while a's entries are on disk
    store.flush([pending("a", 1, n) for n in later], [], T0)
    assert drain(store, spill) == first + later


def test_the_bfs_barrier_waits_for_spilled_entries(redis, tmp_path, spill_of):
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    shallow = [f"a{i:02d}" for i in range(10)]
    store.flush([pending("a", 1, n) for n in shallow] + [pending("b", 2, "b0")], [], T0)
    order: list[str] = []
    for _ in range(100):
        lowest = store.shards.summaries[0].lowest_level
        popped = store.pop(PopOrder(0, NODE, 0.0, deepest_level=lowest), T0)
        if popped is None:
            spill.round(0)
            store.promote([0], T0)
            if store.shards.totals() == (0, 0):
                break
            continue
        lease, entry = popped
        order.append(name_of(entry))
        store.flush([], [(lease, 0.0)], T0)
    assert order == [*shallow, "b0"]


def test_a_batch_written_again_after_a_stop_is_queued_once(redis, tmp_path, spill_of):
    """A worker stopped between writing a batch and trimming it from Redis: the
    next writes it again, and every entry still comes out once."""
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    names = [f"a{i:02d}" for i in range(12)]
    store.flush([pending("a", 1, n) for n in names], [], T0)
    written_before_the_stop = redis.lrange(store.shards.keys[0].spill_out, 0, -1)
    rows = [spilled_row(item) for item in written_before_the_stop]
    table_of(spill).add(0, [row for row in rows if row is not None])
    spill.write_out(0)
    assert table_of(spill).count() == len(names) - HEAD
    assert drain(store, spill) == names


def test_entries_brought_back_twice_are_queued_once(redis, tmp_path, spill_of):
    """A worker stopped between bringing entries back and deleting them from the
    database: they are there again, and still come out once."""
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    names = [f"a{i:02d}" for i in range(12)]
    store.flush([pending("a", 1, n) for n in names], [], T0)
    spill.write_out(0)
    table = table_of(spill)
    queue_class = queue_class_of(redis, store, "a")
    out = []
    for _ in range(HEAD):  # the head goes out: the queue wants its next entries
        popped = store.pop(PopOrder(0, NODE, 0.0), T0)
        assert popped is not None
        out.append(name_of(popped[1]))
        store.flush([], [(popped[0], 0.0)], T0)
    coming_back = table.next(0, "a", queue_class, 0, HEAD)
    assert spill.bring_back(0).brought_back == HEAD
    # As if the worker stopped before deleting them: the rows are there again.
    table.add(0, [("a", queue_class, seq, entry) for seq, entry in coming_back])
    store.promote([0], T0)
    out += drain(store, spill)
    assert out == names
    assert table.count() == 0  # the rows the mark passed were deleted


def test_a_trim_after_another_worker_trimmed_drops_nothing(redis, tmp_path, spill_of):
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    keys = store.shards.keys[0]
    store.flush([pending("a", 1, f"a{i:02d}") for i in range(10)], [], T0)
    stale = redis.lrange(keys.spill_out, 0, 2)
    redis.ltrim(keys.spill_out, 3, -1)  # another worker wrote and trimmed these
    before = redis.lrange(keys.spill_out, 0, -1)
    spill = spill_of(store, url)
    runner = script_runner(redis)
    args = {**common_args(store.shards.config, T0), "count": 3}
    assert runner.run([Call("spill_trim", keys, args, [{"first": stale[0]}])]) == [0]
    assert redis.lrange(keys.spill_out, 0, -1) == before
    assert spill.write_out(0).written == len(before)


def test_a_crawl_that_spilled_refuses_a_node_without_the_spill(
    redis, tmp_path, spill_of
):
    spilling_store(redis, f"sqlite:///{tmp_path}/spill.db")
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update({"FRONTIER_SHARDS": 1})
    store = FrontierStore.on(redis, FrontierConfig.from_settings(settings, "test"))
    with pytest.raises(SchemaMismatchError, match="FRONTIER_SPILL=True"):
        store.prepare(T0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"RECORDS_DATABASE_URL": ""}, "FRONTIER_SPILL needs a database"),
        (
            {"FRONTIER_SPILL_DATABASE_URL": "mysql://db/x"},
            "FRONTIER_SPILL_DATABASE_URL must be sqlite:///path or postgresql://",
        ),
        ({"FRONTIER_SPILL_HEAD": 0}, "FRONTIER_SPILL_HEAD"),
    ],
)
def test_a_wrong_spill_setting_is_named(
    overrides: dict[str, Any], message: str
) -> None:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update({"FRONTIER_SPILL": True, **overrides})
    with pytest.raises(ValueError, match=message):
        FrontierConfig.from_settings(settings, "test")


@deferred_f_from_coro_f
async def test_a_spilling_crawl_fetches_every_page_once_breadth_first(
    settings, spill_url
):
    with running_site(hosts=6, pages=60, links=5, cross=0.3) as site:
        crawler = await crawl(
            settings(
                FRONTIER_BFS_LOOKAHEAD=0,
                FRONTIER_SPILL=True,
                FRONTIER_SPILL_HEAD=2,
                FRONTIER_SPILL_INTERVAL=0.1,
                FRONTIER_SPILL_DATABASE_URL=spill_url,
            ),
            seeds=site.seeds[0],
        )
        pages = fetched(site)
        late = late_shallow_pages(site)
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(pages) == Counter(list(expected))  # each page exactly once
    assert late == 0
    stats = crawler.stats
    assert stats.get_value("finish_reason") == "finished"
    assert stats.get_value("spill/written") > 0
    assert stats.get_value("spill/brought_back") == stats.get_value("spill/written")
    config = FrontierConfig.from_settings(Settings(settings()), "bfs")
    table = SpillTable(spill_url, config.prefix).open()
    try:
        assert table.count() == 0
    finally:
        table.close()


def spill_settings(database: Path) -> list[str]:
    """A spill of two entries a queue, to a SQLite file, in short rounds."""
    return [
        "FRONTIER_SPILL=True",
        "FRONTIER_SPILL_HEAD=2",
        "FRONTIER_SPILL_INTERVAL=0.2",
        f"FRONTIER_SPILL_DATABASE_URL=sqlite:///{database}",
    ]


@pytest.mark.parametrize("order", ["bfs", "importance"])
def test_a_spilling_crawl_killed_with_sigkill_resumes_and_loses_nothing(
    redis, redis_url, tmp_path, order
):
    fetches, reachable, log = kill_and_resume(
        redis,
        redis_url,
        *spill_settings(tmp_path / "spill.db"),
        f"FRONTIER_ORDER={order}",
    )
    assert set(fetches) == reachable  # nothing lost
    assert sum(count - 1 for count in fetches.values()) <= 4  # what was in flight
    assert re.search(r"'spill/brought_back': [1-9]", log)  # the successor's stats


@pytest.mark.parametrize("order", ["bfs", "importance"])
def test_a_spilling_crawl_waits_out_a_redis_restart_and_finishes(tmp_path, order):
    result, refetched, missing = crawl_through(
        tmp_path,
        restart,
        [*spill_settings(tmp_path / "spill.db"), f"FRONTIER_ORDER={order}"],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert missing == 0, result.stderr[-3000:]
    assert refetched <= IN_FLIGHT
    assert re.search(r"'spill/brought_back': [1-9]", result.stderr)
    assert "Traceback" not in result.stderr


def test_a_shard_repaired_while_its_queues_are_on_disk_keeps_their_counts(
    redis, tmp_path, spill_of
):
    """A shard whose heads ran dry looks stuck: the scan that sets its counts from
    its queues counts the spilled entries too, or the crawl would end without them."""
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    names = [f"a{i:02d}" for i in range(10)]
    store.flush([pending("a", 1, n) for n in names], [], T0)
    spill.write_out(0)
    out = []
    for _ in range(HEAD):
        popped = store.pop(PopOrder(0, NODE, 0.0), T0)
        assert popped is not None
        out.append(name_of(popped[1]))
        store.flush([], [(popped[0], 0.0)], T0)
    store.rescue(T0, [0])  # the scan of a stuck shard
    assert store.shards.totals() == (len(names) - HEAD, 0)
    assert redis.hgetall(store.shards.keys[0].outstanding) == {
        str(level_of(1)).encode(): str(len(names) - HEAD).encode()
    }
    assert out + drain(store, spill) == names


def test_an_unreachable_spill_database_stops_start_up_with_one_line(redis_url):
    result = run(
        scrapy_crawl(
            f"REDIS_URL={redis_url}",
            "FRONTIER_SPILL=True",
            "FRONTIER_SPILL_DATABASE_URL=postgresql://crawl:s3cret@127.0.0.1:9/crawl",
        )
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "FRONTIER_SPILL_DATABASE_URL" in errors[0]
    assert "s3cret" not in result.stderr
    assert "Traceback" not in result.stderr


def test_two_nodes_share_a_spill_in_postgresql_and_fetch_every_page(
    redis, redis_url, postgres_url, tmp_path
):
    """A node joins a spilling crawl: shards move to it with their entries on disk,
    which it brings back from the shared database."""
    with running_site(hosts=6, pages=40, links=4, latency=0.05) as site:
        settings = [
            f"REDIS_URL={redis_url}",
            "FRONTIER_MAINTENANCE_INTERVAL=0.3",
            "FRONTIER_NODE_WEIGHT=1",
            "FRONTIER_SPILL=True",
            "FRONTIER_SPILL_HEAD=2",
            "FRONTIER_SPILL_INTERVAL=0.2",
            f"FRONTIER_SPILL_DATABASE_URL={postgres_url}",
            "DOWNLOAD_DELAY=0.05",
        ]
        seeds = ",".join(site.seeds)
        total = len(bfs_depths(site.spec, [(i, 0) for i in range(6)]))
        with contextlib.ExitStack() as stack:
            logs = [
                stack.enter_context((tmp_path / f"node{i}.log").open("w+"))
                for i in (1, 2)
            ]
            nodes = [
                subprocess.Popen(
                    scrapy_crawl(*settings, "FRONTIER_NODE_NAME=one", seeds=seeds),
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=logs[0],
                )
            ]
            try:
                assert wait_for(lambda: len(site.pages()) >= total // 4, timeout=60)
                nodes.append(
                    subprocess.Popen(
                        scrapy_crawl(*settings, "FRONTIER_NODE_NAME=two"),
                        cwd=ROOT,
                        stdout=subprocess.DEVNULL,
                        stderr=logs[1],
                    )
                )
                assert [node.wait(120) for node in reversed(nodes)] == [0, 0]
            finally:
                for node in nodes:
                    if node.poll() is None:
                        node.kill()
                        node.wait()
            outputs = []
            for log in logs:
                log.seek(0)
                outputs.append(log.read())
        fetches = page_fetches(site)
    assert set(fetches) == set(bfs_depths(site.spec, [(i, 0) for i in range(6)]))
    assert sum(count - 1 for count in fetches.values()) == 0, outputs[1][-3000:]
    found = [re.findall(r"'spill/brought_back': (\d+)", out) for out in outputs]
    assert all(found), outputs[1][-3000:]  # each node ran its spill worker
    assert int(found[0][-1]) > 0  # (the joining node's share depends on its shards)


@pytest.mark.parametrize(
    ("order", "head"), [("bfs", 1), ("importance", 1), ("importance", 2)]
)
@deferred_f_from_coro_f
async def test_a_crawl_with_a_small_head_fetches_every_page_once(
    settings, tmp_path, order, head
):
    """A head of one empties a queue at each pop, before its refill: the crawl
    looked drained for a moment and ended (a cached end-of-crawl answer). In
    importance order an entry comes back at its band's floor."""
    with running_site(hosts=5, pages=60, links=6, cross=0.4) as site:
        crawler = await crawl(
            settings(
                FRONTIER_ORDER=order,
                FRONTIER_SPILL=True,
                FRONTIER_SPILL_HEAD=head,
                FRONTIER_SPILL_INTERVAL=0.1,
                FRONTIER_SPILL_DATABASE_URL=f"sqlite:///{tmp_path}/spill.db",
            ),
            seeds=site.seeds[0],
        )
        pages = fetched(site)
    assert Counter(pages) == Counter(list(bfs_depths(site.spec, [(0, 0)])))
    assert crawler.stats.get_value("spill/brought_back") > 0


def test_a_damaged_spilled_entry_is_counted_out_and_the_crawl_can_end(
    redis, tmp_path, spill_of
):
    """A value the crawler did not write in spill_out is dropped; the entry its
    queue counted is counted out, or the crawl would wait for it for ever."""
    url = f"sqlite:///{tmp_path}/spill.db"
    store = spilling_store(redis, url)
    spill = spill_of(store, url)
    keys = store.shards.keys[0]
    names = [f"a{i:02d}" for i in range(8)]
    store.flush([pending("a", 1, n) for n in names], [], T0)
    redis.lset(keys.spill_out, 1, b"\xff not an entry")  # a04 replaced
    assert spill.write_out(0).damaged == 1
    out = drain(store, spill)
    assert out == [n for n in names if n != "a04"]
    assert store.shards.totals() == (0, 0)
    assert int(redis.hget(keys.counters, "bad_entries")) >= 1


def test_a_spill_database_that_goes_away_is_waited_out_and_nothing_is_lost(
    redis, redis_url, tmp_path, caplog
):
    """The worker's round fails while the database cannot be opened (here its file
    is a directory); the entries wait in Redis, and the first round after it is
    back writes them all."""
    database = tmp_path / "spill.db"
    url = f"sqlite:///{database}"
    store = spilling_store(redis, url)
    keys = store.shards.keys[0]
    store.flush([pending("a", 1, f"a{i:02d}") for i in range(10)], [], T0)
    database.mkdir()  # the database is away
    reports: list[SpillCounts] = []
    worker = SpillWorker(
        redis_py.Redis.from_url(redis_url),
        store.shards.config,
        owned=lambda: frozenset({0}),
        report=reports.append,
        refilled=lambda shard, summary: None,
    )
    try:
        for _ in range(3):
            assert worker.round().written == 0
        assert redis.llen(keys.spill_out) == 10 - HEAD
        failures = [r for r in caplog.records if "Spill: a round failed" in r.message]
        assert len(failures) == 1  # logged once while it lasts
        database.rmdir()  # back
        assert worker.round().written == 10 - HEAD
        assert redis.llen(keys.spill_out) == 0
        assert [r.written for r in reports] == [10 - HEAD]
    finally:
        worker.stop()
