"""Redis bytes per queued request, measured by running each scheduler without fetching.

``python -m bench.queue_cost --redis-url URL --scheduler frontier|scrapy-redis`` empties
the (benchmark's private) Redis, opens the real scheduler of a crawler built with
``get_crawler``, enqueues N new requests of realistic URLs (depth 3), closes it with
its data kept, and prints one JSON line: the ``used_memory`` delta, the part of it
taken by the seen-URL filter, and both per request. The seen filter is also reported
per URL it holds: its growth (bitmaps, or scrapy-redis' fingerprint set) apart from
its fixed part (the frontier's Bloom layouts, written when the scheduler opens).
With many hosts (``--hosts 10000``) every shard gets URLs, so this is the dedup cost
at scale, as ``FRONTIER_DEDUP_CAPACITY`` (= ``--requests``) sizes it. Run in its
own process: it installs the asyncio reactor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from scrapy import Request
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler

from bench import redisprobe
from bench.crawls import COMMON, FRONTIER_PREFIX, SCRAPY_REDIS_SPIDER
from crawler.meta import LINK_CREDIT
from tests.servers import postgres_for_tests
from tests.standin import standin_engine

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from scrapy import Spider
    from scrapy.crawler import Crawler

REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
# --spill-url for a private PostgreSQL server (initdb in a temporary directory).
PRIVATE_POSTGRES = "private-postgresql"
DEPTH = 3


def urls(count: int, hosts: int, port: int) -> Iterator[str]:
    """*count* distinct page URLs spread over *hosts* loopback hosts, like the site."""
    for i in range(count):
        yield f"http://127.0.0.{2 + i % hosts}:{port}/p/{1 + i // hosts}.html"


def frontier_crawler(
    redis_url: str,
    count: int,
    hosts: int,
    order: str = "bfs",
    spill: Spill | None = None,
) -> Crawler:
    import crawler.settings as project  # noqa: PLC0415 (only this scheduler needs it)
    from crawler import defaults  # noqa: PLC0415
    from crawler.spiders.bfs import BfsSpider  # noqa: PLC0415

    settings = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    settings |= {k: getattr(project, k) for k in dir(project) if k.isupper()}
    settings |= _common()
    settings |= {
        "REDIS_URL": redis_url,
        "FRONTIER_HOST_CONCURRENCY": 4,
        "FRONTIER_RESET": True,
        "FRONTIER_PERSIST": True,
        "FRONTIER_DEDUP_CAPACITY": count,
        "FRONTIER_ORDER": order,
    }
    if spill is not None:
        settings |= {
            "FRONTIER_SPILL": True,
            "FRONTIER_SPILL_HEAD": spill.head,
            "FRONTIER_SPILL_DATABASE_URL": spill.url,
            "FRONTIER_SPILL_INTERVAL": 0.2,
        }
    # Nothing is fetched: the scheduler opens against a stand-in engine.
    return standin_engine(get_crawler(BfsSpider, settings))


@dataclass(frozen=True)
class Spill:
    """FRONTIER_SPILL for the run: the head a queue keeps and the database."""

    head: int
    url: str


def spilled_out(client: redis.Redis) -> int:
    """Entries spilled and not yet written to the spill database."""
    keys = client.scan_iter(match=FRONTIER_PREFIX + ":{s*}:spill-out", count=1000)
    return sum(int(client.llen(key)) for key in keys)


def wait_written(client: redis.Redis, timeout: float = 1800.0) -> float:
    """Wait (bounded) for the spill worker to write every spilled entry; seconds."""
    started = time.perf_counter()
    while spilled_out(client) and time.perf_counter() - started < timeout:
        time.sleep(0.5)
    return time.perf_counter() - started


def spill_figures(spill: Spill) -> dict[str, Any]:
    """Rows in the spill table, and its bytes on disk in all and a row (SQLite: the
    file; PostgreSQL: the table with its index)."""
    from crawler.frontier.spill.table import SpillTable  # noqa: PLC0415

    table = SpillTable(spill.url, FRONTIER_PREFIX).open()
    try:
        rows = table.count()
    finally:
        table.close()
    if spill.url.startswith("sqlite:///"):
        size = Path(spill.url[len("sqlite:///") :]).stat().st_size
    else:
        import psycopg  # noqa: PLC0415 (only for PostgreSQL)

        with psycopg.connect(spill.url) as connection:
            query = "SELECT pg_total_relation_size('frontier_spill')"
            (size,) = connection.execute(query).fetchone() or (0,)
    return {
        "spill_head": spill.head,
        "spilled_rows": rows,
        "spill_disk_bytes": size,
        "spill_bytes_per_row": size / rows if rows else None,
    }


def scrapy_redis_crawler(redis_url: str) -> Crawler:
    from bench.spiders import BenchBfsSpider  # noqa: PLC0415

    settings = _common() | {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_QUEUE_CLASS": "scrapy_redis.queue.FifoQueue",
        "REDIS_URL": redis_url,
        "SCHEDULER_PERSIST": True,
    }
    return get_crawler(BenchBfsSpider, settings)


def _common() -> dict[str, Any]:
    return {k: v for k, v in COMMON.items() if k != "EXTENSIONS"}


def scheduler_of(crawler: Crawler, name: str) -> Any:
    if name == "frontier":
        from crawler.frontier.scheduler import (  # noqa: PLC0415
            FrontierScheduler,
        )

        return FrontierScheduler.from_crawler(crawler)
    from scrapy_redis.scheduler import Scheduler  # noqa: PLC0415

    return Scheduler.from_crawler(crawler)


def queued(client: redis.Redis, name: str) -> int:
    """Requests the scheduler's queues hold in Redis, to check the run."""
    if name == "scrapy-redis":
        return int(client.llen(f"{SCRAPY_REDIS_SPIDER}:requests"))
    total = 0
    for key in client.scan_iter(match=FRONTIER_PREFIX + ":{s*}:counters", count=1000):
        total += int(client.hget(key, "queued") or 0)
    return total


def measure(  # noqa: PLR0913, PLR0917 (the benchmark's knobs)
    name: str,
    redis_url: str,
    count: int,
    hosts: int,
    port: int,
    order: str = "bfs",
    spill: Spill | None = None,
) -> dict[str, Any]:
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    client.memory_purge()
    if name == "frontier":
        crawler = frontier_crawler(redis_url, count, hosts, order, spill)
    else:
        crawler = scrapy_redis_crawler(redis_url)
    if crawler.spider is None:
        crawler.spider = crawler._create_spider()
    spider: Spider = crawler.spider
    settings = crawler.settings
    scheduler = scheduler_of(crawler, name)
    scheduler.open(spider)
    # The frontier writes its Bloom filter layouts when it opens: a fixed cost.
    before = redisprobe.used_memory(client)
    seen_open = redisprobe.seen_filter(client, name)
    started = time.perf_counter()
    accepted = sum(
        bool(scheduler.enqueue_request(_request(url, spider)))
        for url in urls(count, hosts, port)
    )
    seconds = time.perf_counter() - started
    # The spill worker writes what spilled on its own thread: waited for.
    written_after = wait_written(client) if spill is not None else 0.0
    scheduler.close("finished")
    delta = redisprobe.used_memory(client) - before
    seen = redisprobe.seen_filter(client, name)
    dedup_growth = seen["bytes"] - seen_open["bytes"]
    in_redis = queued(client, name)
    client.close()
    # URLs the filter in Redis took (the frontier's admission answers before Redis).
    stored = seen["urls"]
    return {
        "scheduler": name,
        "order": order,
        "requests": count,
        "hosts": hosts,
        "accepted": accepted,
        "queued_in_redis": in_redis,
        "seen_urls": stored,
        "enqueue_seconds": seconds,
        "used_memory_delta": delta,
        "dedup_fixed_bytes": seen_open["bytes"],
        "dedup_growth_bytes": dedup_growth,
        "dedup_bytes_per_seen_url": dedup_growth / stored if stored else None,
        "dedup_fixed_bytes_per_seen_url": (
            seen_open["bytes"] / stored if stored else None
        ),
        "dedup_capacity": settings.getint("FRONTIER_DEDUP_CAPACITY") or None,
        "dedup_error_rate": settings.getfloat("FRONTIER_DEDUP_ERROR_RATE") or None,
        "seen_filter_at_open": seen_open,
        "seen_filter": seen,
        "bytes_per_request_total": delta / count,
        "bytes_per_request_queue": (delta - dedup_growth) / count,
        "spill_written_after_seconds": written_after,
        **(spill_figures(spill) if spill is not None else {}),
    }


def _request(url: str, spider: Spider) -> Request:
    """A link as the bfs spider yields it and Scrapy's RefererMiddleware passes it
    on: its callback and errback, and the page it was found on as its Referer."""
    # A link's credit (importance order reads it; the others ignore it).
    meta = {"depth": DEPTH, LINK_CREDIT: 0.01}
    referer = url.rsplit("/", 1)[0] + "/index.html"
    return Request(
        url,
        callback=spider.parse,  # type: ignore[attr-defined]
        errback=getattr(spider, "failed", None),
        meta=meta,
        headers={"Referer": referer},
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--scheduler", choices=("frontier", "scrapy-redis"))
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--port", type=int, default=40123)
    parser.add_argument(
        "--order", choices=("bfs", "importance"), default="bfs", help="FRONTIER_ORDER"
    )
    parser.add_argument(
        "--spill-head", type=int, default=0, help="FRONTIER_SPILL_HEAD (0: spill off)"
    )
    parser.add_argument(
        "--spill-url",
        default="",
        help="FRONTIER_SPILL_DATABASE_URL (with --spill-head)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if "127.0.0.1:6379" in args.redis_url:
        sys.exit("refusing to FLUSHALL the shared Redis on 127.0.0.1:6379")
    install_reactor(REACTOR)
    with contextlib.ExitStack() as stack:
        url = args.spill_url
        if url == PRIVATE_POSTGRES:
            url = stack.enter_context(postgres_for_tests())
        spill = Spill(args.spill_head, url) if args.spill_head else None
        result = measure(
            args.scheduler,
            args.redis_url,
            args.requests,
            args.hosts,
            args.port,
            args.order,
            spill,
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
