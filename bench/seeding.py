"""Bulk seeding (issue 27): URLs a second from a seed file into the queues, one process.

``python -m bench.seeding`` starts a private redis-server, writes a seed file of
``--urls`` URLs over ``--hosts`` loopback names (``http://h123.test/p/4``, nothing is
fetched), and measures the two halves of ``scrapy frontier seed --file`` followed by
a running node's intake:

- push: the command's own code (``crawler.commands.steering.seed``) RPUSHing the file
  to the crawl's seed list;
- intake: the real ``FrontierScheduler`` opened without fetching (as
  ``bench.queue_cost`` does) and its node's ``SeedIntake`` taking the list, each
  maintenance round bounded by ``SEEDS_ROUND_SECONDS`` (the rounds run back to back,
  so the figure is the intake's own pace). Plain-URL seeds take the bulk path
  (issue 27: no Request a seed, one push call a shard a batch); the seeds of the
  round run as the scheduler opens are not timed.

The baselines of the same run: the push with the old command's 1000 URLs a RPUSH;
the intake before the bulk path ("before": a Request a seed, pushed
``FRONTIER_PUSH_BATCH`` at a time; ``--skip-before`` leaves it out); and the old
intake's ceiling: 1000 seeds a maintenance round (one batch a round, as before the
rounds were timed) at the default ``FRONTIER_MAINTENANCE_INTERVAL``, i.e.
``min(intake pace, 1000 / interval)``.
Queued requests are counted in Redis to check that every URL was queued once.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import redis
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler

from bench import queue_cost
from bench.crawls import FRONTIER_PREFIX
from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.crawlstate.keys import CrawlKeys
from tests.standin import standin_engine

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler

# URLs a RPUSH of `scrapy frontier seed` before issue 27.
OLD_SEED_BATCH = 1000
# Seeds a maintenance round took before issue 27 (one SEEDS_PER_BATCH).
OLD_SEEDS_PER_ROUND = 1000
# Rounds at most: a bound on the intake loop (each round takes >= 1000 seeds).
MAX_ROUNDS = 100_000


def write_seeds(path: Path, count: int, hosts: int) -> None:
    """*count* distinct URLs over *hosts* names, one a line."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            out.write(f"http://h{i % hosts}.test/p/{i // hosts}\n")


def push(client: redis.Redis, path: Path, batch: int) -> float:
    """Seconds ``scrapy frontier seed --file`` takes to push *path*, *batch* URLs a
    RPUSH (the old command's 1000, or today's ``SEED_BATCH``)."""
    from crawler.commands import steering  # noqa: PLC0415

    opts = argparse.Namespace(words=[], file=str(path))
    kept = steering.SEED_BATCH
    steering.SEED_BATCH = batch
    try:
        started = time.perf_counter()
        steering.seed(client, CrawlKeys(FRONTIER_PREFIX), opts, io.StringIO())
        return time.perf_counter() - started
    finally:
        steering.SEED_BATCH = kept


def intake(redis_url: str, count: int, *, bulk: bool = True) -> tuple[float, int, int]:
    """Seconds the node's intake takes to queue the seed list, the rounds, and the
    seeds it took in them (those of the round run as the scheduler opened are not
    timed). *bulk*: plain seeds take the bulk path (issue 27), else each is a
    Request, as before."""
    from crawler.frontier.node.seedintake import SeedIntake  # noqa: PLC0415

    crawler = _crawler(redis_url, count)
    scheduler = queue_cost.scheduler_of(crawler, "frontier")
    scheduler.open(crawler.spider)
    opened = scheduler._open
    runtime = opened._runtime
    intake_of = runtime._seeds
    assert isinstance(intake_of, SeedIntake)
    if not bulk:  # the timed rounds build a Request a seed, as before issue 27
        intake_of._enqueue_urls = None
    shards = runtime._shards
    client = shards.client
    left = client.llen(shards.crawl_keys.seeds)
    started = time.perf_counter()
    rounds = 0
    while client.llen(shards.crawl_keys.seeds) and rounds < MAX_ROUNDS:
        runtime._take_seeds()
        rounds += 1
    seconds = time.perf_counter() - started
    scheduler.close("finished")
    return seconds, rounds, left


def _crawler(redis_url: str, count: int) -> Crawler:
    """A crawler whose scheduler opens without fetching (``bench.queue_cost``'s,
    with the spider made before the spider middlewares, which some need)."""
    import crawler.settings as project  # noqa: PLC0415
    from crawler import defaults  # noqa: PLC0415
    from crawler.spiders.bfs import BfsSpider  # noqa: PLC0415

    settings = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    settings |= {k: getattr(project, k) for k in dir(project) if k.isupper()}
    settings |= queue_cost._common()
    settings |= {
        "REDIS_URL": redis_url,
        "FRONTIER_RESET": False,  # the seeds pushed before are the crawl's
        "FRONTIER_PERSIST": True,
        "FRONTIER_DEDUP_CAPACITY": count,
    }
    return standin_engine(get_crawler(BfsSpider, settings))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument(
        "--skip-before",
        action="store_true",
        help="do not time the Request path (a Request a seed, as before issue 27)",
    )
    args = parser.parse_args(argv)
    install_reactor(queue_cost.REACTOR)
    from crawler.commands.steering import SEED_BATCH  # noqa: PLC0415
    from crawler.defaults.frontier import (  # noqa: PLC0415
        FRONTIER_MAINTENANCE_INTERVAL,
    )

    with tempfile.TemporaryDirectory(prefix="bench-seeding-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            seeds = Path(tmp) / "seeds.txt"
            write_seeds(seeds, args.urls, args.hosts)
            client.flushall()
            old_push = push(client, seeds, OLD_SEED_BATCH)
            before = None
            if not args.skip_before:
                before = intake(server.url, args.urls, bulk=False)
                client.flushall()
                push(client, seeds, SEED_BATCH)
            client.flushall()
            pushed = push(client, seeds, SEED_BATCH)
            queued_seconds, rounds, taken = intake(server.url, args.urls)
            queued = queue_cost.queued(client, "frontier")
        finally:
            client.close()
            server.stop()
    pace = taken / queued_seconds
    old = min(pace, OLD_SEEDS_PER_ROUND / FRONTIER_MAINTENANCE_INTERVAL)
    both = args.urls / (pushed + args.urls / pace)
    figures = {
        "urls": args.urls,
        "hosts": args.hosts,
        "queued_in_redis": queued,
        "push_seconds": round(pushed, 2),
        "push_urls_per_s": round(args.urls / pushed),
        "baseline_old_push_urls_per_s": round(args.urls / old_push),
        "intake_seconds": round(queued_seconds, 2),
        "intake_rounds": rounds,
        "intake_timed_urls": taken,
        "intake_urls_per_s": round(pace),
        "push_and_intake_urls_per_s": round(both),
        "baseline_old_intake_urls_per_s": round(old),
    }
    if before is not None:
        figures["before_request_path_intake_urls_per_s"] = round(before[2] / before[0])
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
