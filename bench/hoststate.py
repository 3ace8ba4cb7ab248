"""Benchmark: Redis bytes an idle host costs, by what holds them.

``python -m bench.hoststate [--hosts 200] [--pages 3] [--idle-ttl 8]``

One ``scrapy crawl bfs`` node on a private redis-server crawls ``--hosts`` hosts of
the local test site (``--pages`` pages each, links within each host only), and keeps
running (``FRONTIER_CLOSE_WHEN_DRAINED=False``), as a node of a long crawl does. One
more host answers each request after ``--idle-ttl`` seconds (the node's
``TRAFFIC_IDLE_TTL``), so the crawl goes on there for more than that after the
others are done and idle. Once it is done too, the benchmark reads every key of
the crawl and sorts each key's bytes (``MEMORY USAGE``) into families: a host's own
keys (``traffic:<host>``, ``robots:<origin>``...) and the shared ones whose fields
are hosts (the politeness fields, the rankings). Families that expire on their own
clock (robots.txt records, soft-404 probes, the near-duplicate index) are listed
apart with their TTL. Prints a table of bytes per idle host and writes
``bench/out/hoststate.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

from bench import procs
from bench.crawls import ROOT
from bench.run import code_fingerprint, machine_facts
from crawler.crawlstate.embedded import EmbeddedRedis
from tests.site import read_log

OUT = ROOT / "bench" / "out" / "hoststate.json"
PREFIX = "bfs"
# Key families (a regular expression over the key with the prefix removed, and a
# name); the first that matches wins. Shard keys look like ``{s07}:ready_at``.
FAMILIES = (
    (r"traffic:", "traffic counters"),
    (r"traffic-by:|traffic-active", "traffic rankings"),
    (r"site:", "site-strategy counts"),
    (r"\{s\d+\}:(ready_at|delays|inflight)$", "politeness fields"),
    (r"\{s\d+\}:", "frontier shard keys (per crawl)"),
    (r"robots:", "robots.txt records (own TTL)"),
    (r"soft404:", "soft-404 probes (own TTL)"),
    (r"nd:|nd-bands:|nd-urls:|url-rules:", "near-duplicate index (own TTL)"),
)
WAIT_LIMIT = 600.0  # seconds any one wait may take


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-hoststate-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            facts = machine_facts(client) | {"crawler_code": code_fingerprint()}
            result = run(args, server.url, client, Path(tmp))
        finally:
            client.close()
            server.stop()
    result["machine"] = facts
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    print_table(result)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200, help="idle hosts (<= 252)")
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--idle-ttl", type=int, default=8, help="TRAFFIC_IDLE_TTL")
    args = parser.parse_args(argv)
    if not 1 <= args.hosts <= 252:
        parser.error("--hosts must be between 1 and 252 (one more host is seeded)")
    return args


def run(
    args: argparse.Namespace, redis_url: str, client: redis.Redis, tmp: Path
) -> dict[str, Any]:
    log = tmp / "requests.jsonl"
    shape = procs.SiteShape(args.hosts + 1, args.pages, 2, 0.0)
    slow = ["--behave", f"{args.hosts}=delay:{args.idle_ttl}"]
    with procs.running_site(ROOT, shape, log, slow) as site:
        late = f"127.0.0.{2 + args.hosts}:"
        node = subprocess.Popen(
            crawl_command(args, redis_url, site.seeds),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=(tmp / "node.log").open("wb"),
        )
        try:
            idle = args.hosts * args.pages
            wait_for(lambda: pages_fetched(log, late) >= idle, "crawl")
            done = time.time()
            print(f"  {args.hosts} hosts crawled; the slow one goes on", flush=True)
            wait_for(lambda: pages_fetched(log) >= idle + args.pages, "the slow host")
            if time.time() < done + args.idle_ttl + 1:
                raise RuntimeError("the slow host ended before the others were idle")
            time.sleep(3)  # its traffic flush, and a heartbeat's sweep
            families = measure(client)
            used = int(client.info("memory")["used_memory"])
        finally:
            procs.stop(node)
    return {
        "hosts": args.hosts,
        "pages_a_host": args.pages,
        "idle_ttl": args.idle_ttl,
        "idle_for": round(time.time() - done, 1),
        "used_memory": used,
        "families": families,
    }


def crawl_command(
    args: argparse.Namespace, redis_url: str, seeds: list[str]
) -> list[str]:
    settings = {
        "REDIS_URL": redis_url,
        "FRONTIER_RESET": True,
        "FRONTIER_CLOSE_WHEN_DRAINED": False,
        "FRONTIER_MAINTENANCE_INTERVAL": 1.0,
        "TRAFFIC_IDLE_TTL": args.idle_ttl,
        "POLITENESS_DAY_DELAY": 0.1,
        "POLITENESS_NIGHT_DELAY": 0.1,
        "POLITENESS_JITTER": 0,
        "CLOSESPIDER_TIMEOUT": int(WAIT_LIMIT * 2),
        "LOG_LEVEL": "INFO",
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-a", "scope=seed-hosts"]
    argv += ["-a", f"seeds={','.join(seeds)}"]
    for name, value in settings.items():
        argv += ["-s", f"{name}={value}"]
    return argv


def pages_fetched(log: Path, leaving_out: str = "-") -> int:
    """Pages the site served, those of the host *leaving_out* (``address:``) aside."""
    if not log.exists():
        return 0
    return sum(
        row["status"] == 200
        and row["path"] != "/robots.txt"
        and not row["host"].startswith(leaving_out)
        for row in read_log(log)
    )


def wait_for(done: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not finish in {WAIT_LIMIT:.0f} s")
        time.sleep(0.5)


def measure(client: redis.Redis) -> dict[str, dict[str, int]]:
    """Bytes, keys and members of each family, and how many of its keys have a TTL."""
    found: dict[str, dict[str, int]] = defaultdict(
        lambda: {"bytes": 0, "keys": 0, "ttl": 0, "members": 0}
    )
    for raw in client.scan_iter(match=f"{PREFIX}:*", count=1000):
        key = raw.decode("utf-8", "replace").removeprefix(f"{PREFIX}:")
        family = next(
            (name for pattern, name in FAMILIES if re.match(pattern, key)),
            "other (per crawl)",
        )
        row = found[family]
        row["bytes"] += int(client.memory_usage(raw) or 0)
        row["keys"] += 1
        row["ttl"] += int(client.ttl(raw) > 0)
        row["members"] += members(client, raw)
    return dict(found)


def members(client: redis.Redis, key: bytes) -> int:
    """Fields of a hash, members of a set or sorted set, items of a list; 1 else."""
    counts = {b"hash": client.hlen, b"zset": client.zcard, b"set": client.scard}
    counts[b"list"] = client.llen
    count = counts.get(client.type(key))
    return int(count(key)) if count is not None else 1


def print_table(result: dict[str, Any]) -> None:
    hosts = result["hosts"]
    print(
        f"\n{hosts} hosts of {result['pages_a_host']} pages, idle "
        f"{result['idle_for']:.0f} s (TRAFFIC_IDLE_TTL={result['idle_ttl']}), "
        f"one host just done; used_memory {result['used_memory'] / 2**20:.1f} MiB"
    )
    print(
        f"{'family':<34} {'keys':>6} {'members':>8} {'with TTL':>8} {'bytes':>10} "
        f"{'B/idle host':>12}"
    )
    for name, row in sorted(result["families"].items(), key=lambda kv: -kv[1]["bytes"]):
        print(
            f"{name:<34} {row['keys']:>6} {row['members']:>8} {row['ttl']:>8} "
            f"{row['bytes']:>10} "
            f"{row['bytes'] / hosts:>12.0f}"
        )


if __name__ == "__main__":
    sys.exit(main())
