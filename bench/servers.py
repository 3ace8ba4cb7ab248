"""Benchmark: politeness per server (``POLITENESS_KEY``), many names on few
addresses (issue 25, deliverable 2).

``python -m bench.servers [--quick]``

A real DNS server (``tests.dnsserver``, TTL 300 s) answers N names spread over A
loopback addresses (127.0.0.2, ...; name i on address i mod A); ``tests.site``
serves every name's pages on its address, whatever the Host header, and logs each
arrival per address. Seeds are every name (scope ``seed-hosts``, ``DNS_SERVERS`` the
test server: only loopback is ever fetched), each name with enough pages that its
address is busy about 50 s (20 s with ``--quick``) at the delay D (no jitter,
back-off off, robots.txt obeyed). Runs: per host name on one node (the baseline: today's
behaviour); per address on one node and on three nodes sharing one Redis; and with
one name an address (N = A), per host (the reference: A/D with nothing shared) and
per address (what ``ip`` costs when nothing is shared). Measured at the site, per
address: requests (robots.txt included), the smallest and median gap between two
arrivals, the gaps below D (and those over 1.5 D: a turn of the address lost), and
the rate between the first and last arrival against 1/D. Prints the table, writes
bench/out/servers.json; each run's request log stays in bench/out/logs/.
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench import dispatchnodes as dn
from bench import procs, report
from bench.crawls import BENCH, ROOT
from bench.run import code_fingerprint, machine_facts
from crawler.crawlstate.embedded import EmbeddedRedis
from tests.dnsserver import running_dns
from tests.site import read_log

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tests.dnsserver import RunningDns

OUT = BENCH / "out"
TTL = 300  # seconds: every name is asked once a crawl
CONCURRENCY = 8  # slots a node
TARGET_RATE = 0.10  # the rate of an address within 10% of 1/D
COLUMNS: list[tuple[str, str, str]] = [
    ("run", "run", "{}"),
    ("address", "address", "{}"),
    ("names", "names", "{:d}"),
    ("requests", "requests", "{:d}"),
    ("min gap s", "min_gap", "{:.3f}"),
    ("median gap s", "median_gap", "{:.3f}"),
    ("gaps < D", "gaps_below", "{:d}"),
    ("gaps > 1.5 D", "gaps_long", "{:d}"),
    ("rate x 1/D", "rate_over_allowed", "{:.2f}"),
    ("run pages", "pages", "{:d}"),
    ("run s", "seconds", "{:.0f}"),
]


@dataclass(frozen=True)
class Run:
    """One crawl: its label, politeness key, nodes, and names (all, or one an
    address)."""

    label: str
    key: str
    nodes: int
    shared: bool


RUNS = (
    Run("host, 1 node", "host", 1, True),
    Run("ip, 1 node", "ip", 1, True),
    Run("ip, 3 nodes", "ip", 3, True),
    Run("host, 1 name/addr", "host", 1, False),
    Run("ip, 1 name/addr", "ip", 1, False),
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer pages")
    parser.add_argument("--names", type=int, default=24)
    parser.add_argument("--addresses", type=int, default=3)
    parser.add_argument("--delay", type=float, default=1.0, help="D, seconds")
    parser.add_argument("--timeout", type=float, default=600.0, help="a crawl's")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not 1 <= args.addresses <= args.names or args.addresses > 200:
        parser.error("want 1 <= --addresses <= --names, and at most 200 addresses")
    # Seconds each address should be busy at the delay.
    args.busy = 20.0 if args.quick else 50.0
    return args


def zone_of(names: int, addresses: int) -> dict[str, str]:
    """Name i on address 127.0.0.(2 + i mod A): the test site's host i mod A."""
    return {f"n{i}.servers.test": f"127.0.0.{2 + i % addresses}" for i in range(names)}


def pages_a_name(args: argparse.Namespace, names: int) -> int:
    """Enough pages that an address's names (and their robots.txt) keep it busy
    ``busy`` seconds at the delay."""
    per_address = math.ceil(names / args.addresses)
    return max(2, math.ceil(args.busy / args.delay / per_address) - 1)


@dataclass(frozen=True)
class Lab:
    """The benchmark's private Redis: a client of it, and its URL for the nodes."""

    client: redis.Redis
    redis_url: str


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {"runs": []}
    with tempfile.TemporaryDirectory(prefix="bench-servers-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        lab = Lab(client, server.url)
        try:
            results["machine"] = machine_facts(client)
            for run in RUNS:
                names = args.names if run.shared else args.addresses
                row, found = crawl(args, run, zone_of(names, args.addresses), lab)
                results["runs"].append(row)
                rows += found
        finally:
            client.close()
            server.stop()
    results["machine"]["crawler_code"] = code_fingerprint()
    return finish(args, rows, results)


def crawl(
    args: argparse.Namespace,
    run: Run,
    zone: dict[str, str],
    lab: Lab,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Crawl every name of *zone* once: the run's totals and its rows per address."""
    pages = pages_a_name(args, len(zone))
    print(f"{run.label}: {len(zone)} names on {args.addresses} addresses x {pages} "
          f"pages, delay {args.delay:g} s", flush=True)  # fmt: skip
    # Kept with the nodes' logs, for a look at the gaps afterwards.
    log = args.out / "logs" / f"servers-{run.key}-{run.nodes}-{len(zone)}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    shape = procs.SiteShape(args.addresses, pages, 4, 0.0)
    with (
        running_dns(zone, ttl=TTL) as dns,
        procs.running_site(ROOT, shape, log) as site,
    ):
        lab.client.flushall()
        seeds = [f"http://{name}:{site.port}/" for name in zone]
        launch = _launch(args, run, dns, seeds, lab.redis_url)
        started = time.time()
        nodes = [dn.start(launch, f"s{i + 1}", CONCURRENCY) for i in range(run.nodes)]
        try:
            finished = dn.wait_all(nodes, time.monotonic() + args.timeout)
        finally:
            dn.stop_all(nodes)
        seconds = time.time() - started
        asked = len(dns.resolver.queries)
    print(f"  {seconds:.0f} s", flush=True)
    entries = read_log(log)
    fetched = sum(
        1 for e in entries if e["status"] == 200 and e["path"] != "/robots.txt"
    )
    totals = {
        "run": run.label, "key": run.key, "nodes": run.nodes, "names": len(zone),
        "pages_a_name": pages, "expected_pages": len(zone) * pages, "pages": fetched,
        "requests": len(entries), "seconds": seconds, "finished": finished,
        "exit_codes": [node.process.returncode for node in nodes],
        "dns_queries": asked,
        "busy_pushed_back": sum(
            node.stats().get("politeness/server_busy", 0) for node in nodes
        ),
    }  # fmt: skip
    return totals, measure(args, totals, entries, zone, site.port)


def _launch(
    args: argparse.Namespace,
    run: Run,
    dns: RunningDns,
    seeds: list[str],
    redis_url: str,
) -> dn.Launch:
    settings = {
        "FRONTIER_RESET": False,  # Redis is flushed before each crawl
        "POLITENESS_KEY": run.key,
        "POLITENESS_DAY_DELAY": args.delay,
        "POLITENESS_NIGHT_DELAY": args.delay,
        "POLITENESS_JITTER": 0,
        "POLITENESS_BACKOFF": False,
        "ROBOTSTXT_OBEY": True,
        "DNS_SERVERS": dns.server,
        "FRONTIER_HOST_CONCURRENCY": 1,
        "FRONTIER_MAINTENANCE_INTERVAL": 1.0,
    }
    total = len(seeds) * pages_a_name(args, len(seeds))
    return dn.Launch(",".join(seeds), redis_url, total, args.timeout, args.out,
                     settings)  # fmt: skip


def measure(
    args: argparse.Namespace,
    totals: dict[str, Any],
    entries: list[dict[str, Any]],
    zone: dict[str, str],
    port: int,
) -> list[dict[str, Any]]:
    """One row per address: its arrivals (robots.txt included), their gaps and rate."""
    rows = []
    for address in sorted(set(zone.values())):
        times = sorted(e["t"] for e in entries if e["host"] == f"{address}:{port}")
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        rows.append({
            "run": totals["run"], "address": address,
            "names": sum(1 for a in zone.values() if a == address),
            "requests": len(times), "min_gap": min(gaps, default=None),
            "median_gap": statistics.median(gaps) if gaps else None,
            "max_gap": max(gaps, default=None),
            "gaps_below": sum(1 for gap in gaps if gap < args.delay),
            "gaps_long": sum(1 for gap in gaps if gap > 1.5 * args.delay),
            "rate_over_allowed": (len(times) - 1) / span * args.delay if span else 0.0,
            "pages": totals["pages"], "seconds": totals["seconds"],
        })  # fmt: skip
    return rows


def finish(
    args: argparse.Namespace, rows: list[dict[str, Any]], results: dict[str, Any]
) -> int:
    text = report.table(rows, COLUMNS)
    print("\n" + text)
    ip = [r for r in rows if r["run"].startswith("ip")]
    below = sum(r["gaps_below"] for r in ip)
    worst = min(r["rate_over_allowed"] for r in ip)
    print(f"With POLITENESS_KEY=ip: {below} gaps below D={args.delay:g} s at an "
          f"address (target 0); worst rate x 1/D {worst:.2f} (target within "
          f"{TARGET_RATE:.0%})")  # fmt: skip
    for run in results["runs"]:
        lost = run["expected_pages"] - run["pages"]
        if lost or not run["finished"] or any(run["exit_codes"]):
            print(f"  {run['run']}: {run['pages']} of {run['expected_pages']} pages, "
                  f"exit codes {run['exit_codes']}")  # fmt: skip
    report.save_results("servers", args, results, table=text, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
