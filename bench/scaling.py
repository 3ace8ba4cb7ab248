"""Benchmark: pages/s of 1, 2, 4... frontier nodes on one Redis, and Redis work a page.

``python -m bench.scaling [--nodes 1,2,4] [--hosts 20] [--pages 500]``

For each node count N, on a flushed private redis-server: N ``scrapy crawl bfs``
processes crawl the local site together (the benchmark's frontier settings from
``bench.crawls``: politeness off, ``FRONTIER_HOST_CONCURRENCY=4``, so the crawl is
CPU-bound), each with its own stats file and an ``X-Crawler-Node`` header the site logs.
Every figure about pages comes from the site's request log: pages/s from the first to
the last page fetched by any node ("whole"), and over the window in which every node
was fetching ("all up": from the last node's first page to the first node's last page),
which leaves out the start-up and the tail. CPU is each node's own (``wait4``), Redis
commands and round trips come from the server's counters. scrapy-redis runs the same
way (``--scrapy-redis-nodes``, 1 process by default) for its Redis work a page.

The crawler processes, redis-server and the site share the machine's cores: with 2
cores, N nodes cannot go beyond about 2 x one node. Prints a table and writes
``bench/out/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import psutil

from bench import procs, redisprobe, report
from bench.crawls import BENCH, ROOT, CrawlSpec, command
from bench.run import code_fingerprint, machine_facts
from tests.site import read_log

if TYPE_CHECKING:
    from collections.abc import Sequence

    import redis

    from crawler.crawlstate.embedded import EmbeddedRedis

OUT = BENCH / "out"
REAP_INTERVAL = 0.05
# scrapy-redis nodes leave when their queue is empty: the 2nd... start once it is not.
FIRST_PAGES_TIMEOUT = 60.0
COLUMNS: list[tuple[str, str, str]] = [
    ("crawler", "crawler", "{}"),
    ("nodes", "nodes", "{:d}"),
    ("pages", "pages", "{:d}"),
    ("refetched", "refetched", "{:d}"),
    ("s", "seconds", "{:.1f}"),
    ("pages/s", "pages_per_second", "{:.0f}"),
    ("x 1 node", "scaling", "{:.2f}"),
    ("all-up pages/s", "all_up_pages_per_second", "{:.0f}"),
    ("x 1 node (all up)", "all_up_scaling", "{:.2f}"),
    ("CPU s/node", "cpu_seconds_per_node", "{:.1f}"),
    ("CPU ms/page", "cpu_ms_per_page", "{:.2f}"),
    ("Redis CPU s", "redis_cpu_seconds", "{:.1f}"),
    ("site CPU s", "site_cpu_seconds", "{:.1f}"),
    ("Redis cmds/page", "redis_commands_per_page", "{:.1f}"),
    ("Redis trips/page", "redis_round_trips_per_page", "{:.2f}"),
]


@dataclass(frozen=True)
class Around:
    """What every crawl of the benchmark shares: Redis, the site and its log."""

    args: argparse.Namespace
    client: redis.Redis
    server: EmbeddedRedis
    site: procs.Site
    log: Path


@dataclass
class Node:
    """One crawler process of a crawl and what it cost (filled in when reaped)."""

    label: str
    process: subprocess.Popen[bytes]
    output: IO[bytes]
    stats_file: Path
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    timed_out: bool = False


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="1,2,4", help="node counts, e.g. 1,2,4")
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=500, help="pages a host")
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--cross", type=float, default=0.2)
    parser.add_argument(
        "--scrapy-redis-nodes",
        default="1",
        help="node counts of the scrapy-redis crawls ('' for none)",
    )
    parser.add_argument(
        "--maintenance-interval",
        type=float,
        default=1.0,
        help="FRONTIER_MAINTENANCE_INTERVAL: a joining node waits up to one for its "
        "share (default 5 s would weigh on a short crawl)",
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.nodes = _counts(parser, args.nodes)
    args.scrapy_redis_nodes = _counts(parser, args.scrapy_redis_nodes)
    if not args.nodes or args.hosts < 1 or args.pages < 1:
        parser.error("need --nodes, --hosts >= 1 and --pages >= 1")
    return args


def _counts(parser: argparse.ArgumentParser, text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        parser.error(f"node counts are integers separated by commas, got {text!r}")
    if any(not 1 <= count <= 32 for count in counts):
        parser.error(f"node counts must be in 1..32, got {text!r}")
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cores = psutil.cpu_count() or 1
    print(f"Site: {args.hosts} hosts x {args.pages} pages = "
          f"{args.hosts * args.pages} pages, {args.links} links a page; "
          f"frontier nodes {args.nodes}, scrapy-redis nodes "
          f"{args.scrapy_redis_nodes}; {cores} cores")  # fmt: skip
    code = code_fingerprint()
    shape = procs.SiteShape(args.hosts, args.pages, args.links, args.cross)
    with procs.lab(ROOT, shape, log=True) as lab:
        assert lab.log is not None
        around = Around(args, lab.client, lab.server, lab.site, lab.log)
        rows = [crawl(around, "frontier", n) for n in args.nodes]
        rows += [crawl(around, "scrapy-redis", n) for n in args.scrapy_redis_nodes]
        facts = machine_facts(lab.client)
    facts["crawler_code"] = code
    return finish(args, rows, facts, cores)


def crawl(around: Around, crawler: str, count: int) -> dict[str, Any]:
    """One crawl of the whole site by *count* nodes of *crawler*, measured."""
    args, client = around.args, around.client
    client.flushall()
    seen = len(read_log(around.log)) if around.log.exists() else 0
    print(f"Crawl {crawler} x {count} ...", flush=True)
    redis_cpu = procs.cpu_seconds(around.server.pid)
    site_cpu = procs.cpu_seconds(around.site.process.pid)
    calls = command_calls(client)
    before = redisprobe.activity(client)
    nodes = run_nodes(around, crawler, count, seen)
    activity = redisprobe.activity(client) - before
    calls = {k: v - calls.get(k, 0) for k, v in command_calls(client).items()}
    row: dict[str, Any] = {"crawler": crawler, "nodes": count}
    row |= measure(read_log(around.log)[seen:], [n.label for n in nodes])
    row |= costs(nodes, row["pages"], activity)
    row["redis_cpu_seconds"] = procs.cpu_seconds(around.server.pid) - redis_cpu
    row["site_cpu_seconds"] = procs.cpu_seconds(around.site.process.pid) - site_cpu
    row["redis_calls_per_page_by_command"] = {
        name: round(value / row["pages"], 2) if row["pages"] else None
        for name, value in sorted(calls.items(), key=lambda item: -item[1])
        if value > 0
    }
    row["warnings"] = check(row, nodes, args.hosts * args.pages)
    print(f"  {row['pages']} pages in {row['seconds']:.1f} s = "
          f"{row['pages_per_second']:.0f} pages/s (all up: "
          f"{row['all_up_pages_per_second']:.0f}), CPU "
          f"{row['cpu_seconds_per_node']:.1f} s a node", flush=True)  # fmt: skip
    return row


def command_calls(client: redis.Redis) -> dict[str, int]:
    """Calls of each command so far, those run inside Lua scripts included."""
    stats: dict[str, dict[str, Any]] = client.info("commandstats")  # type: ignore[assignment]
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def run_nodes(around: Around, crawler: str, count: int, seen: int) -> list[Node]:
    """Start *count* nodes, wait for all of them to exit (killed at the timeout)."""
    args = around.args
    nodes: list[Node] = []
    deadline = time.monotonic() + args.timeout
    try:
        for index in range(count):
            if crawler == "scrapy-redis" and index == 1:
                _wait_for_pages(around.log, seen, deadline)
            nodes.append(start_node(around, crawler, count, index))
        reap(nodes, deadline)
    finally:
        for node in nodes:
            if node.process.returncode is None:
                node.process.kill()
                node.process.wait(procs.STOP_TIMEOUT)
            node.output.close()
    return nodes


def start_node(around: Around, crawler: str, count: int, index: int) -> Node:
    args = around.args
    label = f"{crawler}-{count}x-n{index + 1}"
    extra: dict[str, Any] = {"DEFAULT_REQUEST_HEADERS": {"X-Crawler-Node": label}}
    if crawler == "frontier":
        extra |= {
            "FRONTIER_RESET": False,  # the benchmark flushes Redis before a crawl
            "FRONTIER_MAINTENANCE_INTERVAL": args.maintenance_interval,
        }
    elif index > 0:
        extra["SCHEDULER_FLUSH_ON_START"] = False  # only the first node flushes
    stats_file = args.out / "stats" / f"scaling-{label}.json"
    stats_file.unlink(missing_ok=True)
    spec = CrawlSpec(
        around.site.seeds[0], around.server.url, args.hosts * args.pages,
        args.timeout, stats_file, extra=extra,
    )  # fmt: skip
    cmd = command(crawler, spec)
    log_path = args.out / "logs" / f"scaling-{label}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    output = log_path.open("wb")
    process = subprocess.Popen(
        cmd.argv, cwd=cmd.cwd, env=cmd.env, stdout=output, stderr=subprocess.STDOUT
    )
    return Node(label, process, output, stats_file)


def _wait_for_pages(log: Path, seen: int, deadline: float) -> None:
    """Until the site logged a page of this crawl (bounded)."""
    limit = min(deadline, time.monotonic() + FIRST_PAGES_TIMEOUT)
    while time.monotonic() < limit:
        if log.exists() and len(read_log(log)) > seen:
            return
        time.sleep(REAP_INTERVAL)


def reap(nodes: list[Node], deadline: float) -> None:
    """Reap each node with ``wait4``: its own CPU time and peak RSS, exactly.

    A node still running at *deadline* is killed and marked timed out."""
    running = {node.process.pid: node for node in nodes}
    while running:
        for pid, node in list(running.items()):
            if time.monotonic() >= deadline:
                node.timed_out = True
                node.process.send_signal(signal.SIGKILL)
                flags = 0
            else:
                flags = os.WNOHANG
            done, status, usage = os.wait4(pid, flags)
            if done == 0:
                continue
            node.process.returncode = os.waitstatus_to_exitcode(status)
            node.cpu_seconds = usage.ru_utime + usage.ru_stime
            node.peak_rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
            del running[pid]
        time.sleep(REAP_INTERVAL)


def measure(rows: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    """Pages, refetches and rates of one crawl, from the site's request log."""
    pages = [r for r in rows if r["path"] != "/robots.txt" and r["node"] in labels]
    first = pages[0]["t"] if pages else 0.0
    seconds = pages[-1]["t"] - first if len(pages) > 1 else 0.0
    by_node = {label: [r["t"] for r in pages if r["node"] == label] for label in labels}
    fetched = [times for times in by_node.values() if times]
    start = max((times[0] for times in fetched), default=0.0)
    end = min((times[-1] for times in fetched), default=0.0)
    window = sum(start <= r["t"] <= end for r in pages)
    unique = len({(r["host"], r["path"]) for r in pages})
    return {
        "pages": len(pages),
        "refetched": len(pages) - unique,
        "seconds": seconds,
        "pages_per_second": (len(pages) - 1) / seconds if seconds else 0.0,
        "all_up_seconds": end - start,
        "all_up_pages_per_second": (window - 1) / (end - start) if end > start else 0.0,
        "pages_by_node": {label: len(times) for label, times in by_node.items()},
        "all_up_late_by": start - first,
    }


def costs(
    nodes: list[Node], pages: int, activity: redisprobe.Activity
) -> dict[str, Any]:
    """CPU of the nodes and Redis work, in all and a page."""
    cpu = sum(node.cpu_seconds for node in nodes)
    trips = activity.reads - 1  # minus the INFO that read the counters at the end
    return {
        "cpu_seconds": cpu,
        "cpu_seconds_by_node": [round(node.cpu_seconds, 2) for node in nodes],
        "cpu_seconds_per_node": cpu / len(nodes),
        "cpu_ms_per_page": 1000 * cpu / pages if pages else None,
        "peak_rss_mb_by_node": [round(node.peak_rss_mb) for node in nodes],
        "redis_commands": activity.commands,
        "redis_round_trips": trips,
        "redis_commands_per_page": activity.commands / pages if pages else None,
        "redis_round_trips_per_page": trips / pages if pages else None,
        "exits": [node.process.returncode for node in nodes],
        "finish_reasons": [_stats(node).get("finish_reason") for node in nodes],
    }


def _stats(node: Node) -> dict[str, Any]:
    if not node.stats_file.exists():
        return {}
    stats: dict[str, Any] = json.loads(node.stats_file.read_text("utf-8"))
    return stats


def check(row: dict[str, Any], nodes: list[Node], total: int) -> list[str]:
    """What went wrong with a crawl, one line each."""
    tag = f"{row['crawler']} x {row['nodes']}"
    warnings = [f"{tag}: {n.label} killed at the timeout" for n in nodes if n.timed_out]
    warnings += [
        f"{tag}: {node.label} exited with {code} ({reason!r})"
        for node, code, reason in zip(
            nodes, row["exits"], row["finish_reasons"], strict=True
        )
        if code != 0 or reason != "finished"
    ]
    if row["pages"] - row["refetched"] != total:
        warnings.append(
            f"{tag}: fetched {row['pages'] - row['refetched']} distinct pages of "
            f"{total}"
        )
    idle = [label for label, pages in row["pages_by_node"].items() if not pages]
    if idle:
        warnings.append(f"{tag}: nodes that fetched nothing: {', '.join(idle)}")
    return warnings


def add_scaling(rows: list[dict[str, Any]]) -> None:
    """Each row's rates over the same crawler's with the fewest nodes."""
    for row in rows:
        base = min(
            (r for r in rows if r["crawler"] == row["crawler"]),
            key=lambda r: r["nodes"],
        )
        for key, ratio in (
            ("pages_per_second", "scaling"),
            ("all_up_pages_per_second", "all_up_scaling"),
        ):
            row[ratio] = row[key] / base[key] if base[key] else None
        row["scaling_base_nodes"] = base["nodes"]


def finish(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    facts: dict[str, Any],
    cores: int,
) -> int:
    add_scaling(rows)
    text = report.table(rows, COLUMNS)
    cores_note = (
        f"x 1 node: over the same crawler with the fewest nodes. This machine has "
        f"{cores} cores shared by the nodes, redis-server and the site: N nodes "
        f"cannot go beyond about {cores} x one node, however well they scale."
    )
    notes = [
        cores_note,
        "all up: from the last node's first page to the first node's last page.",
    ]
    warnings = [w for row in rows for w in row["warnings"]]
    print()
    print(text)
    for row in rows:
        top = list(row["redis_calls_per_page_by_command"].items())[:6]
        print(f"{row['crawler']} x {row['nodes']}: Redis commands a page, most: "
              + ", ".join(f"{name} {calls}" for name, calls in top))  # fmt: skip
    for line in notes + [f"WARNING: {w}" for w in warnings]:
        print(line)
    results = {
        "command": " ".join([".venv/bin/python -m bench.scaling", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        "machine": facts,
        "table": text,
        "notes": notes,
        "runs": rows,
        "warnings": warnings,
    }
    report.write_json(args.out / "scaling.json", results)
    print(f"\nWrote {args.out / 'scaling.json'}")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
