"""CPU a scrape of /metrics costs the crawling process, apart from the crawl.

``python -m bench.metricscost [--shards 64] [--scrapes 200] [--stats-keys 200]``

The ``frontier+metrics`` row of ``bench.run`` measures the whole crawl, whose
pages/s swing far more than 1% on a shared machine; this measures the scrape alone:
the endpoint's registry (node families from a stats dict the size of a crawl's,
cluster-wide gauges of a crawl of *shards* shards on a private redis-server, the
process collector) rendered as a scrape renders it, with and without the Redis
read. Prints CPU ms a scrape, and the share of one core scraping every second takes.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import redis
from prometheus_client import generate_latest

from crawler.context.roundtriptimes import RoundTripTimes
from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.status import read_status
from crawler.metrics.cluster import ClusterGauges
from crawler.metrics.collector import NodeCollector
from crawler.metrics.exporter import metrics_registry

if TYPE_CHECKING:
    from collections.abc import Callable


def stats_of_a_crawl(keys: int) -> dict[str, float]:
    """A stats dict with *keys* entries, the families' own among them."""
    stats: dict[str, float] = {f"other/key_{i}": i for i in range(keys)}
    for status in (200, 301, 404, 500, 503):
        stats[f"downloader/response_status_count/{status}"] = 10
    for fate in ("fetched", "http_error", "network_error", "timed_out"):
        stats[f"bfs/fate_count/{fate}"] = 10
    return stats


def scraper(
    client: redis.Redis,
    keys: CrawlKeys,
    args: argparse.Namespace,
    stats: dict[str, float],
    clock: Callable[[], float],
) -> Callable[[], bytes]:
    """A scrape of the endpoint's registry: what one GET /metrics renders."""
    cluster = ClusterGauges(args.refresh, clock=clock)
    cluster.attach(lambda: read_status(client, keys, args.shards))
    registry = metrics_registry(
        NodeCollector(lambda: stats, RoundTripTimes(), cluster, 3)
    )
    generate_latest(registry)  # the first one, imports and connection warmed
    return lambda: generate_latest(registry)


def cpu_ms(scrape: Callable[[], bytes], args: argparse.Namespace) -> float:
    """CPU ms of one call of *scrape*, over ``--scrapes`` calls."""
    started = time.process_time()
    for _ in range(args.scrapes):
        scrape()
    return 1000 * (time.process_time() - started) / int(args.scrapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--stats-keys", type=int, default=200)
    parser.add_argument("--refresh", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metricscost-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            keys = CrawlKeys("bench")
            for shard in range(args.shards):
                client.hset(keys.shard(shard).counters, mapping={"queued": 100})
            stats = stats_of_a_crawl(args.stats_keys)
            cached = cpu_ms(scraper(client, keys, args, stats, time.monotonic), args)
            # A clock a refresh ahead at every look: every scrape reads Redis.
            ahead = itertools.count(step=args.refresh).__next__
            reading = cpu_ms(scraper(client, keys, args, stats, ahead), args)
        finally:
            client.close()
            server.stop()
    per_second = (cached * (args.refresh - 1) + reading) / args.refresh
    print(f"CPU a scrape: {cached:.2f} ms (cached gauges), {reading:.2f} ms (with "
          f"the Redis read of {args.shards} shards)")  # fmt: skip
    print(f"Scraping every second, reading every {args.refresh:g} s: "
          f"{per_second:.2f} CPU ms a second = {per_second / 10:.3f}% of one core")  # fmt: skip


if __name__ == "__main__":
    main()
