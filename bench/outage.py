"""Redis outage benchmark: nodes crawl the test site while Redis is stopped, then
restarted from its append-only file; does the crawl finish by itself, losing nothing?

    .venv/bin/python -m bench.outage --outage 15 --outage 60 --nodes 2

Each run: a fresh Redis (AOF on) and site, ``--nodes`` crawler processes at the
project's defaults (node TTL, lease timeout, heartbeat interval) but a short
politeness delay; Redis is stopped (SIGTERM) once a third of the pages are fetched,
kept down ``--outage`` seconds, and started again on the same port and file. Measured
from the site's request log: pages fetched / reachable, pages fetched twice (the
bound is the requests in flight: one per host), seconds from the restart to the next
page and to the end of the crawl; from each node's log: exit status and its outage
lines. Results: bench/out/outage.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.crawls import ROOT
from tests.servers import RestartableRedis, running_site, wait_for
from tests.site import bfs_depths, page_index

OUT = ROOT / "bench" / "out"
OUTAGE_LOGGER = "[crawler.context.outage]"
CRAWL_TIMEOUT = 600.0


def node_command(redis_url: str, seeds: list[str], delay: float) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    for setting in (
        f"REDIS_URL={redis_url}",
        "TELNETCONSOLE_ENABLED=False",
        f"POLITENESS_DAY_DELAY={delay}",
        f"POLITENESS_NIGHT_DELAY={delay}",
        "POLITENESS_JITTER=0",
        "PAGESTORE_URL=",
        "RECORDS_DATABASE_URL=",
    ):
        command += ["-s", setting]
    return [*command, "-a", "scope=seed-hosts", "-a", f"seeds={','.join(seeds)}"]


def one_run(args: argparse.Namespace, outage: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="outage-") as tmp:
        server = RestartableRedis(Path(tmp))
        server.start()
        try:
            with running_site(hosts=args.hosts, pages=args.pages, links=4) as site:
                return crawl(args, outage, server, site)
        finally:
            server.stop()


def crawl(
    args: argparse.Namespace, outage: float, server: RestartableRedis, site: Any
) -> dict[str, Any]:
    reachable = bfs_depths(site.spec, [(i, 0) for i in range(args.hosts)])
    command = node_command(server.url, site.seeds, args.delay)
    logs = [Path(server.directory) / f"node{i}.log" for i in range(args.nodes)]
    nodes = []
    for log in logs:  # each node the same seeds: the scope is the seeds' hosts
        with log.open("w") as handle:
            nodes.append(subprocess.Popen(command, cwd=ROOT, stderr=handle, text=True))
        wait_for(lambda log=log: "opened:" in log.read_text(), 60)
    wait_for(lambda: len(site.pages()) >= len(reachable) // 3, 120)
    stopped_at = time.time()
    server.stop()
    time.sleep(outage)
    server.start()
    timeline = Timeline(outage, stopped_at, time.time())
    codes = [node.wait(CRAWL_TIMEOUT) for node in nodes]
    return report(site, reachable, list(zip(logs, codes, strict=True)), timeline)


@dataclass(frozen=True)
class Timeline:
    outage: float
    stopped_at: float
    restarted_at: float


def report(
    site: Any,
    reachable: dict[tuple[int, int], int],
    nodes: list[tuple[Path, int]],
    timeline: Timeline,
) -> dict[str, Any]:
    stopped_at, restarted_at = timeline.stopped_at, timeline.restarted_at
    hosts = {site.host(i): i for i in range(site.spec.hosts)}
    rows = site.pages()
    fetches = Counter(
        (hosts[row["host"]], page_index(row["path"], site.spec.pages)) for row in rows
    )
    after = [row["t"] for row in rows if row["t"] > restarted_at]
    texts = [log.read_text() for log, _ in nodes]
    return {
        "outage_s": timeline.outage,
        "nodes": len(nodes),
        "exit_codes": [code for _, code in nodes],
        "reachable": len(reachable),
        "fetched": len(set(fetches) & set(reachable)),
        "fetched_twice": sum(count - 1 for count in fetches.values()),
        "in_flight_bound": site.spec.hosts,
        "fetched_while_down": sum(stopped_at < row["t"] < restarted_at for row in rows),
        "resumed_after_s": round(min(after) - restarted_at, 1) if after else None,
        "ended_after_s": round(max(row["t"] for row in rows) - restarted_at, 1),
        "warnings": [_count(text, "WARNING") for text in texts],
        "infos": [_count(text, "INFO") for text in texts],
        "tracebacks": sum(text.count("Traceback") for text in texts),
    }


def _count(text: str, level: str) -> int:
    return sum(f"{OUTAGE_LOGGER} {level}:" in line for line in text.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, action="append", default=[])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    results = [one_run(args, outage) for outage in args.outage or [15.0, 60.0]]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "outage.json").write_text(json.dumps(results, indent=2))
    columns = list(results[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for result in results:
        print("| " + " | ".join(str(result[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()
