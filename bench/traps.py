"""Benchmark: the spider-trap defences and small changes on revisits (issue 26).

``python -m bench.traps [--quick] [--revisits-only] [--scale N]`` (``--revisits-only``:
part 3 alone; ``--scale N``: every host's tree of real pages N times larger, the
traps the same)

The trap site (``tests.trapsite``: seven loopback hosts, calendar, sessions, paths,
facets, soft404, mirrors and a plain control, each request logged with its arrival
time) is crawled by one node from its own seeds (scope ``seed-hosts``: only loopback
is fetched), no politeness delay, robots.txt obeyed, ``DEPTH_LIMIT`` 17:

1. with the defences on (the defaults);
2. with them off (``TRAPS_*`` off, no soft-404 probe, no near-duplicates looked
   for, so nothing learnt from them): the traps are endless, so
   the crawl stops at ``CLOSESPIDER_PAGECOUNT`` (``--off-pages``).

Measured at the site, per host and in all (``tests.trapsite.classify``): fetches,
robots.txt and soft-404 probes apart; fetches of trap and of dead URLs (wasted); the
mirrors host's print copies (near-duplicates) in a column of their own; the real pages fetched against ``real_pages(17)``; the wasted share of
all fetches.

3. Revisits of noise-only pages: the mirrors host alone, ``REVISIT_POLICY=adaptive``
   on a seconds scale, with ``REVISIT_CHANGE_THRESHOLD`` at its default and 0
   (every byte change counts): the fetches of /ticking.html (a timestamp changes),
   /advert.html (an advert rotates) and a plain real page, and the last gap between
   two fetches of each.

Prints the tables, writes bench/out/traps.json; each run's request log stays in
bench/out/logs/.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import subprocess
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
from crawler.policy.changehistory import CHANGE_THRESHOLD
from tests.site import read_log
from tests.traproutes import SCALE_VARIABLE, route
from tests.trapsite import KINDS, classify, real_pages

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

OUT = BENCH / "out"
DEPTH = 17  # the crawl's default DEPTH_LIMIT
CONCURRENCY = 8  # slots of the one node
TARGET_WASTED = 0.02  # at most 2% of fetches on traps and dead URLs, defences on
TARGET_REVISIT_RATIO = 3.0  # noise-only pages: at least 3x fewer fetches
PROBE_MARK = "-no-such-page-"  # crawler/policy/traps.py's soft-404 probe path
MIRRORS = KINDS.index("mirrors")
NOISY = ("/ticking.html", "/advert.html")
PLAIN_PAGE = "/page/1.html"  # a real page of the mirrors host that never changes
TRAPS_OFF = {
    "TRAPS_CANONICALIZE": False,
    "TRAPS_MAX_PATH_REPEATS": 0,
    "TRAPS_CALENDAR_HORIZON_DAYS": 0,
    "TRAPS_MAX_QUERY_VARIANTS": 0,
    "TRAPS_SOFT_404": False,
    "TRAPS_CALENDAR_NEAR_MONTHS": "none",
    "NEARDUP_MAX_DISTANCE": 0,
}
COLUMNS: list[tuple[str, str, str]] = [
    ("run", "run", "{}"),
    ("host", "host", "{}"),
    ("fetches", "fetches", "{:d}"),
    ("robots", "robots", "{:d}"),
    ("probes", "probes", "{:d}"),
    ("real", "real_fetches", "{:d}"),
    ("real pages", "real_found", "{}"),
    ("real %", "real_share", "{:.0%}"),
    ("trap", "trap", "{:d}"),
    ("dead", "dead", "{:d}"),
    ("near-dup", "neardup", "{:d}"),
    ("wasted %", "wasted_share", "{:.1%}"),
    ("+ near-dup %", "wasted_neardup_share", "{:.1%}"),
]
REVISIT_COLUMNS: list[tuple[str, str, str]] = [
    ("threshold", "threshold", "{:d}"),
    ("page", "page", "{}"),
    ("fetches", "fetches", "{:d}"),
    ("last gap s", "last_gap", "{:.1f}"),
    ("x threshold 0", "ratio", "{:.1f}"),
    ("run s", "seconds", "{:.0f}"),
]


@dataclass(frozen=True)
class Run:
    """One crawl of the trap site: its label, settings and the hosts it seeds."""

    label: str
    settings: dict[str, Any]
    hosts: tuple[int, ...]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter crawls")
    parser.add_argument("--off-pages", type=int, default=None, help="defences off")
    parser.add_argument("--timeout", type=float, default=900.0, help="a crawl's")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--revisits-only", action="store_true", help="part 3 alone: no trap crawls"
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="each host's real pages times this (the same traps beside a larger "
        "site: a trap's fixed cost against more real pages)",
    )
    args = parser.parse_args(argv)
    if args.scale < 1:
        parser.error("--scale must be 1 or more")
    if args.off_pages is None:
        args.off_pages = 2000 if args.quick else 5000
    # Seconds of each revisit crawl.
    args.revisit_seconds = 60 if args.quick else 120
    return args


def trap_runs(args: argparse.Namespace) -> list[Run]:
    everyone = tuple(range(len(KINDS)))
    off = TRAPS_OFF | {"CLOSESPIDER_PAGECOUNT": args.off_pages}
    return [Run("defences on", {}, everyone), Run("defences off", off, everyone)]


def revisit_runs(args: argparse.Namespace) -> list[Run]:
    common = {
        "REVISIT_POLICY": "adaptive",
        "REVISIT_INTERVAL": 2.0,
        "REVISIT_MIN_INTERVAL": 1.0,
        "REVISIT_MAX_INTERVAL": 32.0,
        "REVISIT_FEED_INTERVAL": 0.5,
        "FRONTIER_CLOSE_WHEN_DRAINED": False,
        "CLOSESPIDER_TIMEOUT": args.revisit_seconds,
    }
    return [
        Run(f"threshold {t}", common | {"REVISIT_CHANGE_THRESHOLD": t}, (MIRRORS,))
        for t in (CHANGE_THRESHOLD, 0)
    ]


@contextlib.contextmanager
def trap_site(log: Path) -> Iterator[tuple[int, list[str]]]:
    """``python -m tests.trapsite`` until the block ends: its port and seeds."""
    argv = [sys.executable, "-m", "tests.trapsite", "--log", str(log)]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        info = json.loads(procs._read_line(process.stdout, procs.SITE_START_TIMEOUT))
        yield int(info["port"]), list(info["seeds"])
    finally:
        procs.stop(process)
        if process.stdout is not None:
            process.stdout.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ[SCALE_VARIABLE] = str(args.scale)  # the site's and classify's
    results: dict[str, Any] = {"runs": [], "scale": args.scale}
    rows: list[dict[str, Any]] = []
    revisit_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-traps-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            results["machine"] = machine_facts(client)
            for run in [] if args.revisits_only else trap_runs(args):
                totals, entries, port = crawl(args, run, client, server.url, tmp)
                results["runs"].append(totals)
                rows += measure_traps(run, entries, port)
            for run in revisit_runs(args):
                totals, entries, port = crawl(args, run, client, server.url, tmp)
                results["runs"].append(totals)
                revisit_rows += measure_revisits(run, totals, entries, port)
        finally:
            client.close()
            server.stop()
    add_ratios(revisit_rows)
    results["machine"]["crawler_code"] = code_fingerprint()
    return finish(args, rows, revisit_rows, results)


def crawl(
    args: argparse.Namespace,
    run: Run,
    client: redis.Redis,
    redis_url: str,
    tmp: str,
) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """One crawl of the site from *run*'s hosts: its totals, the site's log, port."""
    slug = run.label.replace(",", "").replace(" ", "-")
    log = args.out / "logs" / f"traps-{slug}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    print(f"{run.label}: {len(run.hosts)} hosts", flush=True)
    with trap_site(log) as (port, seeds):
        client.flushall()
        store = Path(tmp) / slug
        store.mkdir()
        launch = _launch(args, run, [seeds[i] for i in run.hosts], redis_url, store)
        started = time.time()
        node = dn.start(launch, "t1", CONCURRENCY)
        try:
            finished = dn.wait_all([node], time.monotonic() + args.timeout)
        finally:
            dn.stop_all([node])
        seconds = time.time() - started
    print(f"  {seconds:.0f} s", flush=True)
    stats = node.stats()
    totals = {
        "run": run.label, "settings": run.settings, "seconds": seconds,
        "finished": finished, "exit_code": node.process.returncode,
        "finish_reason": stats.get("finish_reason"),
        "stats": {
            k: v for k, v in stats.items()
            if k.startswith(("traps/", "neardup/", "revisit/", "downloader/response_count"))
            or k in ("item_scraped_count", "response_received_count")
        },
    }  # fmt: skip
    return totals, read_log(log), port


def _launch(
    args: argparse.Namespace,
    run: Run,
    seeds: list[str],
    redis_url: str,
    store: Path,
) -> dn.Launch:
    settings = {
        "FRONTIER_RESET": False,  # Redis is flushed before each crawl
        "POLITENESS_DAY_DELAY": 0,
        "POLITENESS_NIGHT_DELAY": 0,
        "POLITENESS_JITTER": 0,
        "ROBOTSTXT_OBEY": True,
        "DEPTH_LIMIT": DEPTH,
        "FRONTIER_MAINTENANCE_INTERVAL": 1.0,
        "PAGESTORE_URL": str(store / "pages"),
        "RECORDS_DATABASE_URL": f"sqlite:///{store}/pages.db",
        "CLOSESPIDER_TIMEOUT": max(60, int(args.timeout) - 60),
        **run.settings,
    }
    # The seen filter's capacity: far more URLs than the defences-off run finds.
    return dn.Launch(",".join(seeds), redis_url, 20 * args.off_pages, args.timeout,
                     args.out, settings)  # fmt: skip


def kind_of_entry(entry: dict[str, Any], host_index: int) -> str:
    """What a logged request was: robots, probe, real, trap, dead or neardup."""
    target = entry["path"]
    if target.partition("?")[0] == "/robots.txt":
        return "robots"
    if PROBE_MARK in target:
        return "probe"
    kind = classify(host_index, target)
    if kind == "trap" and route(host_index, target).variant == "print":
        return "neardup"
    return kind


def host_index_of(entry: dict[str, Any]) -> int:
    """``127.0.0.<2+i>:port`` -> i."""
    return int(entry["host"].partition(":")[0].rsplit(".", 1)[1]) - 2


def measure_traps(
    run: Run, entries: list[dict[str, Any]], port: int
) -> list[dict[str, Any]]:
    """One row per host, then one for all: fetches by kind, real pages found."""
    expected = real_pages(DEPTH)
    rows = []
    for index in run.hosts:
        mine = [e for e in entries if host_index_of(e) == index]
        rows.append(tally(run.label, KINDS[index], index, mine, expected))
    rows.append(tally(run.label, "all", None, entries, expected))
    return rows


def tally(
    label: str,
    host: str,
    index: int | None,
    entries: list[dict[str, Any]],
    expected: set[tuple[int, str]],
) -> dict[str, Any]:
    """The row of *entries* (one host's, or all when *index* is None)."""
    counts = dict.fromkeys(("robots", "probe", "real", "trap", "dead", "neardup"), 0)
    found: set[tuple[int, str]] = set()
    for entry in entries:
        i = host_index_of(entry)
        kind = kind_of_entry(entry, i)
        counts[kind] += 1
        if kind == "real":
            found.add((i, entry["path"]))
    wanted = {p for p in expected if index is None or p[0] == index}
    got = len(found & wanted)
    fetches = len(entries)
    wasted = counts["trap"] + counts["dead"]
    return {
        "run": label, "host": host, "fetches": fetches, "robots": counts["robots"],
        "probes": counts["probe"], "real_fetches": counts["real"],
        "real_found": f"{got}/{len(wanted)}", "real_got": got,
        "real_expected": len(wanted),
        "real_share": got / len(wanted) if wanted else 0.0,
        "real_missing": sorted(f"{KINDS[i]}{p}" for i, p in wanted - found),
        "real_outside_depth": sorted(f"{KINDS[i]}{p}" for i, p in found - expected),
        "trap": counts["trap"], "dead": counts["dead"], "neardup": counts["neardup"],
        "wasted_share": wasted / fetches if fetches else 0.0,
        "wasted_neardup_share": (wasted + counts["neardup"]) / fetches
        if fetches else 0.0,
    }  # fmt: skip


def measure_revisits(
    run: Run, totals: dict[str, Any], entries: list[dict[str, Any]], port: int
) -> list[dict[str, Any]]:
    """The fetches of the noise-only pages and a plain one, and their last gap."""
    rows = []
    for page in (*NOISY, PLAIN_PAGE):
        times = sorted(
            e["t"] for e in entries if host_index_of(e) == MIRRORS and e["path"] == page
        )
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        rows.append({
            "run": run.label, "threshold": run.settings["REVISIT_CHANGE_THRESHOLD"],
            "page": page, "fetches": len(times),
            "last_gap": gaps[-1] if gaps else None,
            "gaps": [round(g, 2) for g in gaps],
            "statuses": [e["status"] for e in entries
                         if host_index_of(e) == MIRRORS and e["path"] == page],
            "seconds": totals["seconds"],
        })  # fmt: skip
    return rows


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Each page's fetches at threshold 0 over its fetches in the row's run."""
    baseline = {r["page"]: r["fetches"] for r in rows if r["threshold"] == 0}
    for row in rows:
        base = baseline.get(row["page"])
        row["ratio"] = base / row["fetches"] if base and row["fetches"] else None


def finish(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    revisit_rows: list[dict[str, Any]],
    results: dict[str, Any],
) -> int:
    text = report.table(rows, COLUMNS)
    revisit_text = report.table(revisit_rows, REVISIT_COLUMNS)
    print("\n" + text + "\n\n" + revisit_text)
    for row in rows:
        if row["host"] == "all":
            print(f"{row['run']}: {row['real_found']} real pages within depth "
                  f"{DEPTH} (target 100%), wasted {row['wasted_share']:.1%} of "
                  f"{row['fetches']} fetches (target <= {TARGET_WASTED:.0%} "
                  f"with the defences on), near-dups {row['neardup']}")  # fmt: skip
            if missing := row["real_missing"]:
                more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
                print(f"  missing: {', '.join(missing[:10])}{more}")
    for row in revisit_rows:
        if row["threshold"] != 0 and row["page"] in NOISY and row["ratio"]:
            print(f"{row['page']}: {row['ratio']:.1f}x fewer fetches than with "
                  f"threshold 0 (target >= {TARGET_REVISIT_RATIO:g}x)")  # fmt: skip
    for run in results["runs"]:
        if not run["finished"] or run["exit_code"]:
            print(f"  {run['run']}: finished {run['finished']}, exit code "
                  f"{run['exit_code']}")  # fmt: skip
    report.save_results(
        "traps" if args.scale == 1 else f"traps-scale{args.scale}",
        args,
        results,
        table=text,
        revisit_table=revisit_text,
        rows=rows,
        revisit_rows=revisit_rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
