"""How fast the dashboard's JSON state answers for a crawl of 10,000 hosts.

Fills a private Redis with a crawl's state written by the frontier's own store
(its Lua scripts: pushes at depths 0-2, leases, acks with fates and host delays),
traffic counters and ranks as the traffic middleware writes them, timeout records
(some hosts paused), and four live nodes with an hour of pages a minute; then
serves the dashboard on 127.0.0.30 and times GET /state.json with its cache off.
The target (issue 15): under 200 ms.

    .venv/bin/python -m bench.dashboard [--hosts 10000] [--requests 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis
from scrapy.settings import Settings

from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.crawlstate.keys import CrawlKeys
from crawler.dashboard import server as dashboard_server
from crawler.dashboard.server import Dashboard, DashboardConfig, DashboardServer
from crawler.defaults import install_defaults
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.progress import PACE_MINUTES, pace_fields
from crawler.frontier.store.roundtrip import Ack, Pending, PopOrder
from crawler.frontier.store.store import FrontierStore
from crawler.policy.order import level_of
from crawler.policy.sharding import shard_of
from crawler.policy.tiers import HostHealth

PREFIX = "bench"
KEYS = CrawlKeys(PREFIX)
NODES = ("node-1", "node-2", "node-3", "node-4")
ADDRESS = "127.0.0.30"
FATES = ("fetched", "fetched", "fetched", "redirected", "http_error", "timed_out")
BATCH = 500


def fill(client: redis.Redis, hosts: int, rng: random.Random) -> dict[str, Any]:
    """Write the state of a crawl of *hosts* hosts; what was written."""
    settings = Settings()
    install_defaults(settings)
    config = FrontierConfig.from_settings(settings, PREFIX)
    store = FrontierStore.on(client, config)
    now = time.time()
    store.prepare(now)
    names = [f"host-{i}.example" for i in range(hosts)]
    pending = [
        Pending(shard_of(h, config.shards), h, level_of(d, 0), "", f"{h} {d} {j}")
        for h in names
        for d, j in ((0, 0), (1, 0), (1, 1), (2, 0))
    ]
    for start in range(0, len(pending), BATCH):
        store.flush(pending[start : start + BATCH], [], now)
    for shard in range(config.shards):
        client.set(KEYS.shard(shard).owner, NODES[shard % len(NODES)], px=600_000)
    acked = popped = 0
    for shard in range(config.shards):
        node = NODES[shard % len(NODES)]
        for _ in range(hosts // config.shards // 3):  # a third of hosts fetched once
            order = PopOrder(shard=shard, node_id=node, default_delay=5.0)
            lease = store.pop(order, now)
            if lease is None:
                break
            popped += 1
            if popped % 4:  # three in four done, one in four still in flight
                store.flush([], [Ack(lease[0], 5.0, rng.choice(FATES))], now)
                acked += 1
    write_traffic(client, names, rng, now)
    write_nodes(client, now)
    return {"hosts": hosts, "pushed": len(pending), "popped": popped, "acked": acked}


def write_traffic(
    client: redis.Redis, names: list[str], rng: random.Random, now: float
) -> None:
    """Traffic counters and ranks of every host, and timeout records of a fifth."""
    pipe = client.pipeline(transaction=False)
    for i, host in enumerate(names):
        requests = rng.randint(1, 400)
        errors = rng.randint(0, 5)
        failures = errors + rng.randint(0, 9)
        fields: dict[str, str | int] = {"requests": requests, "bytes": requests * 3000, "2xx": requests,
                  "errors": errors, "failures": failures, "delay": "5",
                  "reason": rng.choice(("day", "night", "crawl-delay", "override"))}  # fmt: skip
        pipe.hset(KEYS.traffic(host), mapping=fields)  # type: ignore[arg-type]
        for metric in ("requests", "bytes", "errors", "failures"):
            pipe.zadd(KEYS.traffic_rank(metric), {host: fields[metric]})
        if i % 5 == 0:
            paused = now + 600 if i % 10 == 0 else 0.0
            health = HostHealth(slow=i % 15 == 0, paused_until=paused)
            pipe.hset(KEYS.health, host, health.to_json())
        if len(pipe) >= 5000:
            pipe.execute()
    pipe.execute()


def write_nodes(client: redis.Redis, now: float) -> None:
    """Four live nodes, each with an hour of pages done a minute."""
    minute = int(now // 60)
    for node in NODES:
        entry = {"id": node, "heartbeat": now - 1, "started": now - 3600, "pages": 9000,
                 "pages_per_min": 150.0, "shards": []}  # fmt: skip
        client.hset(KEYS.nodes, node, json.dumps(entry))
        client.set(KEYS.heartbeat(node), "1", px=600_000)
        ring: dict[str, int] = {}
        for m in range(minute - PACE_MINUTES + 1, minute + 1):
            minute_field, pages_field = pace_fields(m)
            ring |= {minute_field: m, pages_field: 150}
        client.hset(KEYS.pace(node), mapping=ring)  # type: ignore[arg-type]
        client.zadd(KEYS.pace_nodes, {node: now})


def time_endpoint(url: str, requests: int) -> tuple[list[float], int]:
    """Seconds each GET /state.json took (the cache off), and the body's size."""
    parts = url.removeprefix("http://").rstrip("/").split(":")
    connection = http.client.HTTPConnection(parts[0], int(parts[1]), timeout=30)
    times, size = [], 0
    try:
        for _ in range(requests):
            started = time.perf_counter()
            connection.request("GET", "/state.json")
            answer = connection.getresponse()
            body = answer.read()
            times.append(time.perf_counter() - started)
            assert answer.status == 200, body[:200]
            size = len(body)
    finally:
        connection.close()
    return times, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    dashboard_server.CACHE_SECONDS = 0.0  # every request reads Redis
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            started = time.perf_counter()
            written = fill(client, args.hosts, random.Random(15))
            print(f"filled in {time.perf_counter() - started:.1f} s: {written}")
            run(client, args.requests)
        finally:
            client.close()
            server.stop()


def run(client: redis.Redis, requests: int) -> None:
    settings = Settings()
    install_defaults(settings)
    config = DashboardConfig(settings.getint("FRONTIER_SHARDS"), 20, 3.0, None)
    board = Dashboard(client, KEYS, config)
    with DashboardServer((ADDRESS, 0), board) as web:
        thread = threading.Thread(target=web.serve_forever, daemon=True)
        thread.start()
        reads = client.info("stats")["total_reads_processed"]
        cpu = time.process_time()
        times, size = time_endpoint(web.url, requests)
        cpu = time.process_time() - cpu
        reads = client.info("stats")["total_reads_processed"] - reads - 1
        web.shutdown()
    ms = sorted(t * 1000 for t in times)
    print(
        f"GET /state.json x{requests}: median {statistics.median(ms):.1f} ms, "
        f"p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, max {ms[-1]:.1f} ms; "
        f"{size} bytes; {reads / requests:.1f} Redis round trips and "
        f"{cpu * 1000 / requests:.1f} CPU ms (server and client) a request; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
