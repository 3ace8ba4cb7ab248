"""Object-store outage benchmark: a node stores its pages in an S3-compatible server
(SeaweedFS, tests/objectstore.py) that is stopped mid-crawl; while it is away the
node is killed with SIGKILL; the server comes back and a successor node finishes the
crawl. Is every page the site served an object, byte for byte, and named by its
record?

    .venv/bin/python -m bench.storageoutage --outage 30

Each run: a fresh Redis, server and site (``--hosts`` x ``--pages``); the node
crawls at a short politeness delay; the server is stopped (SIGTERM) once a third of
the pages are objects, kept down ``--outage`` seconds (the node is killed
``--kill-after`` seconds into it), then started again on the same ports and data,
and a successor node (no seeds: it resumes from Redis) crawls to the end. Measured:
pages the site served, objects in the bucket and how many equal the page's body
fetched again from the site, records naming their object, pages fetched twice, and
the successor's time to the end. Results: bench/out/storageoutage.json and a
markdown table on stdout.
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.crawls import ROOT
from bench.report import write_json
from crawler.policy.storepath import store_path
from tests.objectstore import ObjectStoreServer
from tests.servers import RestartableRedis, RunningSite, running_site, wait_for

OUT = ROOT / "bench" / "out"
BUCKET = "pages"
PREFIX = "bench"
CRAWL_TIMEOUT = 600.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage", type=float, action="append", help="seconds")
    parser.add_argument("--kill-after", type=float, default=10.0)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.1, help="s between pages")
    args = parser.parse_args(argv)
    args.outage = args.outage or [30.0]
    return args


def node_command(
    settings: dict[str, Any], seeds: str = "", name: str = ""
) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    if name:
        command += ["-s", f"FRONTIER_NODE_NAME={name}"]
    command += ["-a", "scope=seed-hosts"]
    return [*command, "-a", f"seeds={seeds}"] if seeds else command


def one_run(args: argparse.Namespace, outage: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="storageoutage-") as tmp:
        redis = RestartableRedis(Path(tmp) / "redis")
        redis.start()
        store = ObjectStoreServer(Path(tmp) / "seaweedfs")
        store.start()
        try:
            store.make_bucket(BUCKET)
            with running_site(hosts=args.hosts, pages=args.pages, links=4) as site:
                return crawl(args, outage, Lab(Path(tmp), redis.url, store, site))
        finally:
            store.stop()
            redis.stop()


@dataclass(frozen=True)
class Lab:
    """One run's servers: its directory, Redis, object store and site."""

    tmp: Path
    redis_url: str
    store: ObjectStoreServer
    site: RunningSite


def crawl(args: argparse.Namespace, outage: float, lab: Lab) -> dict[str, Any]:
    tmp, store, site = lab.tmp, lab.store, lab.site
    records = tmp / "pages.db"
    settings = {
        **store.settings(BUCKET, PREFIX),
        "REDIS_URL": lab.redis_url,
        "RECORDS_DATABASE_URL": f"sqlite:///{records}",
        "TELNETCONSOLE_ENABLED": "False",
        "POLITENESS_DAY_DELAY": args.delay,
        "POLITENESS_NIGHT_DELAY": args.delay,
        "POLITENESS_JITTER": 0,
        "FRONTIER_LEASE_TIMEOUT": 10,
        "FRONTIER_MAINTENANCE_INTERVAL": 1,
        "FRONTIER_NODE_TTL": 5,
    }
    total = args.hosts * args.pages
    with (tmp / "first.log").open("w") as log:
        first = subprocess.Popen(
            node_command(settings, ",".join(site.seeds)),
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        wait_for(
            lambda: (
                first.poll() is not None or len(store.objects(BUCKET)) >= total // 3
            ),
            CRAWL_TIMEOUT,
            0.5,
        )
        if first.poll() is not None:
            raise RuntimeError(f"the node exited early: see {tmp / 'first.log'}")
        store.stop()
        stopped = time.monotonic()
        time.sleep(min(args.kill_after, outage))
        fetched_at_kill = len(site.pages())
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
        store.start()
        down = time.monotonic() - stopped
    started = time.monotonic()
    successor = subprocess.run(
        node_command(settings, name="successor"),
        cwd=ROOT, capture_output=True, text=True, timeout=CRAWL_TIMEOUT, check=False,
    )  # fmt: skip
    finished = time.monotonic() - started
    return figures(
        site, store, records, outage=down, fetched_at_kill=fetched_at_kill
    ) | {
        "successor_exit": successor.returncode,
        "successor_seconds": round(finished, 1),
        "held_lines": (tmp / "first.log").read_text().count("cannot take pages"),
    }


def figures(
    site: RunningSite,
    store: ObjectStoreServer,
    records: Path,
    *,
    outage: float,
    fetched_at_kill: int,
) -> dict[str, Any]:
    """What was served, stored and recorded, each checked against the site."""
    served = {
        f"http://{r['host']}{r['path']}" for r in site.pages() if r["status"] == 200
    }
    fetches = Counter(f"http://{r['host']}{r['path']}" for r in site.pages())
    objects = store.objects(BUCKET, f"{PREFIX}/")
    equal = 0
    for url in served:
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310
            body = answer.read()
        equal += objects.get(f"{PREFIX}/{store_path(url).as_posix()}") == body
    with sqlite3.connect(records) as db:
        rows = dict(db.execute("SELECT url, store_path FROM pages WHERE status = 200"))
    named = sum(rows.get(url) == store_path(url).as_posix() for url in served)
    return {
        "outage_seconds": round(outage, 1),
        "pages_served": len(served),
        "fetched_at_kill": fetched_at_kill,
        "objects": len(objects),
        "objects_equal_to_page": equal,
        "records_naming_object": named,
        "pages_lost": len(served) - equal,
        "fetched_twice": sum(count > 1 for count in fetches.values()),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = []
    for outage in args.outage:
        print(f"Outage of {outage:.0f} s...", flush=True)
        runs.append(one_run(args, outage))
        print(f"  {runs[-1]}", flush=True)
    columns = list(runs[0])
    print("\n| " + " | ".join(columns) + " |")
    print("|" + "---:|" * len(columns))
    for run in runs:
        print("| " + " | ".join(str(run[c]) for c in columns) + " |")
    command = " ".join(["python -m bench.storageoutage", *(argv or sys.argv[1:])])
    write_json(OUT / "storageoutage.json", {"command": command, "runs": runs})
    return (
        0 if all(r["pages_lost"] == 0 and r["successor_exit"] == 0 for r in runs) else 1
    )


if __name__ == "__main__":
    sys.exit(main())
