"""Benchmark: "never twice, never lost" under faults, on the local site (issue 10).

``python -m bench.faults [--quick] [--only NAME,NAME]``

Each scenario gets a fresh redis-server (append-only file in a temporary directory,
fixed port) and a fresh site (several hosts), and crawls it with ``scrapy crawl bfs
-a scope=seed-hosts`` processes seeded with every host's root (10 hosts x 200 pages;
``--quick`` 6 x 60), records in a temporary SQLite file, the page store in a temporary
directory, the project's defaults but for a politeness delay of 0.5 s (quick 1 s: the
crawl must outlast ``FRONTIER_NODE_TTL`` after an outage), ``CONCURRENT_REQUESTS=8``
and short robots.txt and retry-later delays.

- ``outage-15s``, ``outage-60s``: two nodes; once a third of the pages are fetched,
  Redis is stopped with SIGTERM (it writes its AOF), restarted on the same port and
  directory after the outage, and the crawl must end by itself (no rerun) within
  ``--finish-timeout`` of the restart.
- ``kill-9-x5``: one node killed with SIGKILL at a random moment after its first page,
  five times, the same command rerun after each; then a last run to its end.
- ``flaky-robots``: robots.txt of host 1 answers 503, host 2 429, host 3 nothing, for
  their first fetches, then 200 (``ROBOTS_ERROR_RETRY_DELAY`` and
  ``RETRY_LATER_DELAYS`` small).
- ``flaky-pages``: host 1 answers 503 with Retry-After, host 2 refuses connections,
  for the first ``--window`` seconds of the site; host 3 answers each page's first
  request 503 (Retry-After: 1).

One row a scenario, every figure from the site's request log and the records database
(``bench/faultmeasure.py``): pages fetched / reachable, duplicate fetches against the
in-flight bound (CONCURRENT_REQUESTS x nodes x kills or outages), records rows of the
URLs fetched, failed URLs with a recorded fate, wall time. It reports; it asserts
nothing. Writes ``bench/out/faults.json``.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import faultlab, faultmeasure, procs, report
from bench.crawls import BENCH
from bench.faultscenarios import Scenario, scenarios
from bench.run import code_fingerprint, machine_facts_standalone

if TYPE_CHECKING:
    from collections.abc import Sequence

OUT = BENCH / "out"
COLUMNS: list[tuple[str, str, str]] = [
    ("scenario", "scenario", "{}"),
    ("fetched / reachable", "fetched_of_reachable", "{}"),
    ("%", "fetched_percent", "{:.1f}"),
    ("duplicates", "duplicates", "{:d}"),
    ("in-flight bound", "inflight_bound", "{:d}"),
    ("rows / fetched", "rows_of_fetched", "{}"),
    ("failed URLs", "failed", "{:d}"),
    ("with a fate", "failed_with_fate", "{:d}"),
    ("runs: exits", "exits", "{}"),
    ("wall s", "wall_seconds", "{:.0f}"),
]

# Options whose default depends on --quick: (full, quick).
DEFAULTS: dict[str, tuple[float, float]] = {
    "hosts": (10, 6),
    "pages": (200, 60),
    "delay": (0.5, 1.0),
    "finish_timeout": (300.0, 180.0),
    "timeout": (600.0, 300.0),
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="6 hosts x 60 pages")
    parser.add_argument("--hosts", type=int, default=None, help="default 10 (quick 6)")
    parser.add_argument("--pages", type=int, default=None, help="a host; 200 (60)")
    parser.add_argument("--links", type=int, default=4)
    parser.add_argument("--cross", type=float, default=0.2)
    parser.add_argument(
        "--delay", type=float, default=None,
        help="politeness delay, s; default 0.5 (quick 1.0): the crawl must outlast "
        "FRONTIER_NODE_TTL after an outage")  # fmt: skip
    parser.add_argument(
        "--concurrency", type=int, default=8, help="CONCURRENT_REQUESTS"
    )
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument(
        "--kill-after", type=float, default=3.0, help="a kill comes 0.5-this s after "
        "the run's first page")  # fmt: skip
    parser.add_argument("--window", type=float, default=20.0, help="flaky pages, s")
    parser.add_argument(
        "--finish-timeout", type=float, default=None,
        help="after Redis is back, s; default 300 (quick 180)")  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=None, help="a crawl run, s; 600 (300)"
    )
    parser.add_argument("--seed", type=int, default=10, help="of the kill moments")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    for name, (full, quick) in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.hosts < 4 or args.pages < 2 or args.kills < 0:
        parser.error("need --hosts >= 4 (flaky hosts 1-3), --pages >= 2, --kills >= 0")
    names = [s.name for s in scenarios(args.window)]
    args.only = [n.strip() for n in args.only.split(",") if n.strip()] or names
    if set(args.only) - set(names):
        parser.error(f"--only takes names among {', '.join(names)}")
    return args


def run_scenario(args: argparse.Namespace, scenario: Scenario) -> dict[str, Any]:
    """A fresh stage, the scenario's runs, then its row (measured before teardown)."""
    shape = procs.SiteShape(args.hosts, args.pages, args.links, args.cross)
    print(f"Scenario {scenario.name} ...", flush=True)
    with faultlab.stage(shape, scenario.site_args, args.out / "logs") as stage:
        started = time.monotonic()
        outcome = scenario.run(args, stage, scenario)
        wall = time.monotonic() - started
        bound = args.concurrency * scenario.nodes * outcome["events"]
        reach = faultmeasure.reachable(shape, stage.site.port)
        row = {"scenario": scenario.name, "wall_seconds": wall}
        row |= faultmeasure.measure(
            stage.tail.read(), stage.tmp / "pages.db", reach, bound
        )
        row["exits"] = " ".join(node.outcome() for node in stage.nodes)
        row["log_errors"] = faultlab.errors_logged(stage.nodes)
        row |= outcome
    print(f"  {row['fetched_of_reachable']} fetched, {row['duplicates']} duplicates, "
          f"rows {row['rows_of_fetched']}, {row['failed']} failed "
          f"({row['failed_with_fate']} with a fate), {wall:.0f} s; {row['note']}",
          flush=True)  # fmt: skip
    return row


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited off
    chosen = [s for s in scenarios(args.window) if s.name in args.only]
    print(f"Site: {args.hosts} hosts x {args.pages} pages, {args.links} links a page, "
          f"politeness delay {args.delay} s; scenarios: "
          f"{', '.join(s.name for s in chosen)}", flush=True)  # fmt: skip
    code = code_fingerprint()
    rows = [_row_or_error(args, scenario) for scenario in chosen]
    facts = machine_facts_standalone()
    facts["crawler_code"] = code
    finish(args, rows, facts)
    return 0


def _row_or_error(args: argparse.Namespace, scenario: Scenario) -> dict[str, Any]:
    """The scenario's row; if the stage itself failed (a server that would not start
    again, say), a row saying so, and the next scenario runs."""
    try:
        return run_scenario(args, scenario)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"  {scenario.name} could not run: {exc!r}", flush=True)
        return {"scenario": scenario.name, "note": f"could not run: {exc!r}"}


def _exit_on_sigterm(_signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so every process and server is stopped."""
    raise SystemExit(143)


def finish(
    args: argparse.Namespace, rows: list[dict[str, Any]], facts: dict[str, Any]
) -> None:
    """Print the table and notes, write ``faults.json``."""
    text = report.table(rows, COLUMNS)
    notes = [f"{row['scenario']}: {row['note']}" for row in rows]
    print()
    print(text)
    for line in notes:
        print(line)
    results = {
        "command": " ".join([".venv/bin/python -m bench.faults", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        "machine": facts,
        "table": text,
        "notes": notes,
        "runs": rows,
    }
    report.write_json(args.out / "faults.json", results)
    print(f"\nWrote {args.out / 'faults.json'}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted; every crawl, site and Redis stopped.", file=sys.stderr)
        sys.exit(130)
