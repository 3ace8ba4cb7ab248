"""Benchmark: the back-off that learns, against rate-limited servers (issue 25).

``python -m bench.backoff [--quick]``

``tests.site`` with hosts that each accept one request every R seconds (R from
``--limits``, one host per value, several hosts each) and answer 429 without
``Retry-After`` beyond; the politeness delay is far below every R. The whole site
is crawled by one node, then by three nodes on one Redis, with
``POLITENESS_BACKOFF`` on, and once by one node with it off (today's behaviour
before it: the 429'd URLs wait ``RETRY_LATER_DELAYS`` and the host keeps its rate).
Measured at the site, per host, after the first minute of each host: the share of
answers that were 429 and the pages accepted per second against 1/R. Prints the
table, writes bench/out/backoff.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench import dispatchnodes as dn
from bench import procs, report
from bench.crawls import BENCH, ROOT
from bench.run import code_fingerprint, machine_facts
from crawler.crawlstate.embedded import EmbeddedRedis
from tests.site import read_log

if TYPE_CHECKING:
    from collections.abc import Sequence

OUT = BENCH / "out"
WARM_UP = 60.0  # seconds of each host's crawl left out: the delay is learning
TARGET_429, TARGET_RATE = 0.02, 0.15
COLUMNS: list[tuple[str, str, str]] = [
    ("run", "run", "{}"),
    ("R s", "limit", "{:g}"),
    ("hosts", "hosts", "{:d}"),
    ("requests", "requests", "{:d}"),
    ("429 after 1st min", "refused_share", "{:.2%}"),
    ("429 in 1st min", "refused_first_minute", "{:d}"),
    ("rate / allowed", "rate_over_allowed", "{:.2f}"),
    ("pages", "pages", "{:d}"),
    ("s", "seconds", "{:.0f}"),
]
DELAY = 0.1  # the politeness delay: below every limit


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter crawls")
    parser.add_argument("--limits", default="0.5,1,2", help="seconds, one per kind")
    parser.add_argument("--hosts-each", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.limits = [float(x) for x in args.limits.split(",") if x]
    # Seconds of crawl a host should last at its limit: enough after the first minute.
    args.span = 150.0 if args.quick else 300.0
    return args


def pages_a_host(args: argparse.Namespace) -> int:
    """Enough pages that the fastest host is still busy after ``span`` seconds."""
    return int(args.span / min(args.limits)) + 1


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    hosts = len(args.limits) * args.hosts_each
    pages = pages_a_host(args)
    limit_of = {i: args.limits[i % len(args.limits)] for i in range(hosts)}
    behave = [
        arg for i, r in limit_of.items() for arg in ("--behave", f"{i}=limit:{r}")
    ]
    print(f"Site: {hosts} hosts x {pages} pages, limits {args.limits} s "
          f"({args.hosts_each} hosts each), delay {DELAY} s", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    runs = (
        ("on, 1 node", 1, True),
        ("on, 3 nodes", 3, True),
        ("off, 1 node", 1, False),
    )
    with tempfile.TemporaryDirectory(prefix="bench-backoff-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            results["machine"] = machine_facts(client)
            for label, count, enabled in runs:
                log = Path(tmp) / f"requests-{count}-{enabled}.jsonl"
                shape = procs.SiteShape(hosts, pages, 4, 0.0)
                with procs.running_site(ROOT, shape, log, behave) as site:
                    client.flushall()
                    launch = _launch(args, site, server.url, hosts * pages, enabled)
                    started = time.time()
                    nodes = [dn.start(launch, f"b{i + 1}", 8) for i in range(count)]
                    try:
                        dn.wait_all(nodes, time.monotonic() + args.timeout)
                    finally:
                        dn.stop_all(nodes)
                    print(f"  {label}: {time.time() - started:.0f} s", flush=True)
                rows += measure(label, read_log(log), limit_of, site.port)
        finally:
            client.close()
            server.stop()
    results["machine"]["crawler_code"] = code_fingerprint()
    return finish(args, rows, results)


def _launch(
    args: argparse.Namespace, site: Any, redis_url: str, total: int, enabled: bool
) -> dn.Launch:
    settings = {
        "FRONTIER_RESET": False,  # Redis is flushed before each crawl
        "POLITENESS_DAY_DELAY": DELAY,
        "POLITENESS_NIGHT_DELAY": DELAY,
        "POLITENESS_JITTER": 0,
        "POLITENESS_BACKOFF": enabled,
        "FRONTIER_HOST_CONCURRENCY": 1,
        "FRONTIER_MAINTENANCE_INTERVAL": 1.0,
        "RETRY_LATER_DELAYS": [5, 10, 20, 40, 80],
        "CLOSESPIDER_TIMEOUT": args.span + WARM_UP,
    }
    return dn.Launch(",".join(site.seeds), redis_url, total, args.timeout, args.out,
                     settings)  # fmt: skip


def measure(
    label: str, log: list[dict[str, Any]], limit_of: dict[int, float], port: int
) -> list[dict[str, Any]]:
    """One row per limit: its hosts' requests after each host's first minute."""
    rows = []
    for limit in sorted(set(limit_of.values())):
        names = {f"127.0.0.{2 + i}:{port}" for i, r in limit_of.items() if r == limit}
        refused = later = accepted = first_minute = 0
        span = 0.0
        for name in names:
            mine = [r for r in log if r["host"] == name and r["path"] != "/robots.txt"]
            if not mine:
                continue
            start, end = mine[0]["t"], mine[-1]["t"]
            after = [r for r in mine if r["t"] >= start + WARM_UP]
            first_minute += sum(
                1 for r in mine if r["t"] < start + WARM_UP and r["status"] == 429
            )
            later += len(after)
            refused += sum(1 for r in after if r["status"] == 429)
            accepted += sum(1 for r in after if r["status"] == 200)
            span += max(0.0, end - start - WARM_UP)
        rows.append({
            "run": label, "limit": limit, "hosts": len(names), "requests": later,
            "refused_share": refused / later if later else 0.0,
            "refused_first_minute": first_minute,
            "rate_over_allowed": (accepted / span) * limit if span else 0.0,
            "pages": sum(1 for r in log if r["host"] in names and r["status"] == 200),
            "seconds": span / max(1, len(names)) + WARM_UP,
        })  # fmt: skip
    return rows


def finish(
    args: argparse.Namespace, rows: list[dict[str, Any]], results: dict[str, Any]
) -> int:
    text = report.table(rows, COLUMNS)
    learnt = [r for r in rows if r["run"].startswith("on")]
    worst_share = max(r["refused_share"] for r in learnt)
    worst_rate = min(r["rate_over_allowed"] for r in learnt)
    print("\n" + text)
    print(f"With the back-off on: worst 429 share after the first minute "
          f"{worst_share:.2%} (target < {TARGET_429:.0%}); worst rate "
          f"{worst_rate:.2f} of the allowed (target within {TARGET_RATE:.0%})")  # fmt: skip
    report.save_results("backoff", args, results, table=text, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
