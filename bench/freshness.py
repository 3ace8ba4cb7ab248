"""Benchmark: freshness of revisit policies on a changing site, under one fetch budget.

``python -m bench.freshness [--minutes 6] [--hosts 4] [--pages 50] [--delay 0.5]
[--seed 1] [--quick] [--policies uniform,adaptive,halving]``

For each policy: a fresh ``bench.changingsite`` (same seed, so the same change
schedule relative to its start), then ``scrapy crawl bfs`` on its hosts with a fresh
records database, page store and private Redis, every host fetched at most every D s
(no jitter, no night), so the budget is B = H/D fetches a second for every policy;
``REVISIT_INTERVAL`` = (pages + index pages) / B, so uniform spends just the budget.
Each crawl runs the same wall time. Every figure comes from the site's own log: a
page's local copy is the last version the crawler got a 200 for or had confirmed by a
304; it is fresh while that version is current, and its age is 0 while fresh, else the
time since that version was superseded. Averages are over the content pages (not the
indexes) and over the measurement window (after a warm-up of a third of the run).

The optimum is Cho and Garcia-Molina's freshness-optimal allocation of the same
budget to the content pages for their known rates (solved here, not with the
crawler's code): its expected freshness and age; beside them uniform's expected
figures (a check of the measurement) and the optimum at the page fetches adaptive
actually made (its allocation apart from its spending). A second table gives the
fetches a page got, by how often it changes. Each run's site log, crawl log and
records database are kept in ``bench/out/logs/``; ``--from-logs`` measures them again. The policy ``reference`` (not run by default) is a plain
round-robin client in this process at the same budget: a check of the measurement.
Writes ``bench/out/freshness.json``; exits 0 even when a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import procs
from bench.changingsite import page_number, page_path, site_schedule, version_at
from bench.crawls import BENCH, ROOT, Command
from bench.run import code_fingerprint

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from bench.changingsite import PageSchedule

OUT = BENCH / "out"
POLICIES = ("uniform", "adaptive", "halving")
CRAWL_SLACK = 45.0
SOLVER_STEPS = 200
# Change classes of the allocation table: (mean seconds between changes below, label).
CLASSES = (
    (8.0, "< 8 s"),
    (30.0, "8-30 s"),
    (120.0, "30 s-2 min"),
    (400.0, "2-7 min"),
    (1200.0, "7-20 min"),
    (math.inf, ">= 20 min"),
)

# --- The optimum: Cho and Garcia-Molina's allocation for known rates -----------------


def marginal(rate: float, interval: float) -> float:
    """d(freshness)/d(frequency) of a page synced every *interval* s: the Lagrange
    condition sets it equal to the multiplier. Rises from 0 (T -> 0) to 1/rate."""
    x = rate * interval
    if x < 1e-6:
        return rate * interval * interval / 2
    return (-math.expm1(-x) - x * math.exp(-x)) / rate


def interval_for(rate: float, multiplier: float) -> float | None:
    """The interval whose marginal is *multiplier*; None: the page gets no fetches
    (it never changes, or 1/rate <= multiplier: it changes too fast to be worth it)."""
    if rate <= 0 or 1 / rate <= multiplier:
        return None
    low, high = 0.0, 1 / rate
    while marginal(rate, high) < multiplier:
        high *= 2
    for _ in range(SOLVER_STEPS):
        middle = (low + high) / 2
        low, high = (
            (middle, high) if marginal(rate, middle) < multiplier else (low, middle)
        )
    return (low + high) / 2


def optimal_intervals(rates: Sequence[float], budget: float) -> list[float | None]:
    """Each page's interval in the freshness-optimal allocation of *budget* fetches a
    second: the multiplier is bisected (on a log scale) until sum(1/T) = budget."""
    changing = [r for r in rates if r > 0]
    if not changing or budget <= 0:
        return [None] * len(rates)
    low, high = 1e-12, 1 / min(changing)  # spends everything .. spends nothing

    def spent(multiplier: float) -> float:
        return sum(1 / t for r in rates if (t := interval_for(r, multiplier)))

    for _ in range(SOLVER_STEPS):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if spent(middle) > budget else (low, middle)
    return [interval_for(r, math.sqrt(low * high)) for r in rates]


def expected_freshness(rate: float, interval: float) -> float:
    """Time-averaged freshness of a page synced every *interval* s (Poisson changes)."""
    x = rate * interval
    return 1.0 if x == 0 else -math.expm1(-x) / x


def expected_age(rate: float, interval: float) -> float:
    """Time-averaged age (s) of a page synced every *interval* s."""
    x = rate * interval
    if x < 1e-6:
        return rate * interval * interval / 6
    return interval / 2 - 1 / rate - math.expm1(-x) / (rate * x)


def unsynced(rate: float, start: float, end: float) -> tuple[float, float]:
    """(freshness, age) over [start, end] of a page synced once at 0, never again."""
    if rate <= 0:
        return 1.0, 0.0
    lost = (math.exp(-rate * start) - math.exp(-rate * end)) / (rate * (end - start))
    return lost, (start + end) / 2 - 1 / rate + lost / rate


def expected(
    rates: Sequence[float],
    intervals: Sequence[float | None],
    window: tuple[float, float],
) -> tuple[float, float]:
    """Mean (freshness, age) of pages synced at *intervals* (None: once, at 0)."""
    total_f = total_a = 0.0
    for rate, interval in zip(rates, intervals, strict=True):
        if interval is None:
            f, a = unsynced(rate, *window)
        else:
            f, a = expected_freshness(rate, interval), expected_age(rate, interval)
        total_f, total_a = total_f + f, total_a + a
    return total_f / len(rates), total_a / len(rates)


def change_class(rate: float) -> str:
    """The label of a page's change class in the allocation table."""
    if rate <= 0:
        return "never"
    return next(label for bound, label in CLASSES if 1 / rate < bound)


def per_class(rates: Sequence[float], values: Sequence[float]) -> dict[str, float]:
    """Mean of *values* over the pages of each change class."""
    groups: dict[str, list[float]] = {}
    for rate, value in zip(rates, values, strict=True):
        groups.setdefault(change_class(rate), []).append(value)
    return {label: sum(v) / len(v) for label, v in groups.items()}


# --- Measurement, from the site's log only ----------------------------------------------


def page_integrals(
    changes: Sequence[float],
    syncs: Sequence[tuple[float, int]],
    start: float,
    end: float,
) -> tuple[float, float]:
    """(seconds fresh, integral of age) of one page's copy over [start, end]. *syncs*
    are (offset, version) of its 200s and 304s, ascending. Before any sync there is
    no copy: stale, aged from the site's start (offset 0)."""
    inside = [c for c in changes if start < c < end] + [
        t for t, _ in syncs if start < t < end
    ]
    points = sorted({start, end, *inside})
    fresh = age = 0.0
    k, copy = 0, None
    for a, b in itertools.pairwise(points):
        while k < len(syncs) and syncs[k][0] <= a:
            copy = syncs[k][1]
            k += 1
        if copy == version_at(changes, a):
            fresh += b - a
        else:
            since = 0.0 if copy is None else changes[copy - 1]
            age += ((b - since) ** 2 - (a - since) ** 2) / 2
    return fresh, age


def revisits(
    answers: Sequence[tuple[float, int, int | None]], start: float, end: float
) -> tuple[int, int]:
    """(revisits of an unchanged page in [start, end), of which answered 304) among
    one page's (offset, status, version) answers, in time order."""
    copy: int | None = None
    unchanged = not_modified = 0
    for t, status, version in answers:
        if status not in (200, 304):
            continue
        if copy is not None and version == copy and start <= t < end:
            unchanged += 1
            not_modified += status == 304
        copy = version
    return unchanged, not_modified


def read_site_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The site's start line and its responses."""
    lines = path.read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.endswith("}")]
    return rows[0], rows[1:]


def schedule_of(start_line: dict[str, Any]) -> dict[tuple[int, int], PageSchedule]:
    """The change schedule the site's start line names (the site draws the same)."""
    return site_schedule(
        start_line["seed"],
        start_line["hosts"],
        start_line["pages"],
        start_line["horizon"],
    )


def measure(
    schedule: Mapping[tuple[int, int], PageSchedule],
    t0: float,
    rows: Sequence[dict[str, Any]],
    window: tuple[float, float],
) -> dict[str, Any]:
    """Freshness, age, fetches, bytes and 304 share of one run over *window* (offsets
    from the site's start *t0*) from the site's log *rows*; freshness and age over
    the pages of *schedule* (keyed by host and page number), fetches and bytes over
    every request (robots.txt counts for bytes only)."""
    answers: dict[tuple[int, int], list[tuple[float, int, int | None]]] = {}
    fetches = sent = page_fetches = 0
    for row in rows:
        t = row["t"] - t0
        page = page_number(row["path"])
        if window[0] <= t < window[1]:
            sent += row["bytes"]
            fetches += page is not None
            page_fetches += bool(page)
        if page is not None:
            answers.setdefault((row["host"], page), []).append(
                (t, row["status"], row["version"])
            )
    fresh = age = 0.0
    for key, plan in schedule.items():
        syncs = [
            (t, v)
            for t, s, v in answers.get(key, [])
            if s in (200, 304) and v is not None
        ]
        f, a = page_integrals(plan.changes, syncs, *window)
        fresh, age = fresh + f, age + a
    unchanged = not_modified = 0
    for page_answers in answers.values():
        u, n = revisits(page_answers, *window)
        unchanged, not_modified = unchanged + u, not_modified + n
    span = (window[1] - window[0]) * len(schedule)
    counts = [
        sum(window[0] <= t < window[1] for t, _, _ in answers.get(key, []))
        for key in schedule
    ]
    return {
        "fetches_by_class": per_class([p.rate for p in schedule.values()], counts),
        "freshness": fresh / span,
        "mean_age": age / span,
        "fetches": fetches,
        "fetches_per_second": fetches / (window[1] - window[0]),
        "page_fetches": page_fetches,
        "bytes": sent,
        "unchanged_revisits": unchanged,
        "not_modified": not_modified,
        "share_304": not_modified / unchanged if unchanged else None,
        "requests_total": len(rows),
    }


# --- Running the crawls -----------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What every run shares: the site, the budget and the window."""

    hosts: int
    pages: int
    delay: float
    seed: int
    seconds: float
    warmup: float
    validators: str
    min_interval: float
    max_interval: float
    feed_interval: float | None = None

    @property
    def budget(self) -> float:
        """Fetches a second: every host once every D s."""
        return self.hosts / self.delay

    @property
    def interval(self) -> float:
        """Uniform's interval spending the budget on every URL (indexes included)."""
        return self.hosts * (self.pages + 1) / self.budget

    @property
    def window(self) -> tuple[float, float]:
        return self.warmup, self.seconds


@dataclass(frozen=True)
class RunningSite:
    process: subprocess.Popen[str]
    start: dict[str, Any]
    seeds: list[str]


@contextlib.contextmanager
def changing_site(plan: Plan, log: Path) -> Iterator[RunningSite]:
    """``python -m bench.changingsite`` until the block ends."""
    argv = [
        sys.executable, "-m", "bench.changingsite", "--hosts", str(plan.hosts),
        "--pages", str(plan.pages), "--seed", str(plan.seed), "--log", str(log),
        "--horizon", str(plan.seconds + 600), "--validators", plan.validators,
    ]  # fmt: skip
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        info = json.loads(procs._read_line(process.stdout, procs.SITE_START_TIMEOUT))
        yield RunningSite(process, info, info["seeds"])
    finally:
        procs.stop(process)
        if process.stdout is not None:
            process.stdout.close()


def crawl_settings(plan: Plan, policy: str, tmp: Path, stats: Path) -> dict[str, Any]:
    """The crawl's -s settings: the budget's politeness, the policy, private state."""
    feed = (
        {}
        if plan.feed_interval is None
        else {"REVISIT_FEED_INTERVAL": plan.feed_interval}
    )
    return feed | {
        "REVISIT_POLICY": policy,
        "REVISIT_INTERVAL": plan.interval,
        "REVISIT_MIN_INTERVAL": plan.min_interval,
        "REVISIT_MAX_INTERVAL": plan.max_interval,
        "POLITENESS_DAY_DELAY": plan.delay,
        "POLITENESS_NIGHT_DELAY": plan.delay,
        "POLITENESS_JITTER": 0,
        "POLITENESS_MIN_DELAY": 0,
        "FRONTIER_HOST_CONCURRENCY": 1,
        "FRONTIER_RESET": True,
        "FRONTIER_EMBEDDED_REDIS_DIR": str(tmp / "redis"),
        "RECORDS_DATABASE_URL": f"sqlite:///{tmp / 'records.db'}",
        "PAGESTORE_URL": str(tmp / "pages"),
        "CLOSESPIDER_TIMEOUT": int(plan.seconds),
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "EXTENSIONS": json.dumps({"bench.statsfile.StatsFile": 0}),
        "BENCH_STATS_FILE": str(stats),
    }


def crawl_command(plan: Plan, policy: str, seeds: Sequence[str], tmp: Path) -> Command:
    argv = [sys.executable, "-m", "scrapy", "crawl", "bfs"]
    argv += ["-a", f"seeds={','.join(seeds)}", "-a", "scope=seed-hosts"]
    for key, value in crawl_settings(plan, policy, tmp, tmp / "stats.json").items():
        argv += ["-s", f"{key}={value}"]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SCRAPY_") and k != "REDIS_URL"
    }
    return Command(argv, ROOT, env)


def reference_crawl(plan: Plan, site: RunningSite, deadline: float) -> None:
    """A plain uniform client at the budget: one thread a host, cycling through its
    URLs one every D s, with If-None-Match: what uniform should measure."""
    threads = [
        threading.Thread(target=_reference_host, args=(name, plan, deadline))
        for name in site.start["host_names"]
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _reference_host(authority: str, plan: Plan, deadline: float) -> None:
    paths = ["/"] + [page_path(j) for j in range(1, plan.pages + 1)]
    etags: dict[str, str] = {}
    connection = http.client.HTTPConnection(authority, timeout=10)
    due = time.time()
    for count in range(int((deadline - due) / plan.delay) + 1):
        time.sleep(max(0.0, due - time.time()))
        path = paths[count % len(paths)]
        headers = {"If-None-Match": etags[path]} if path in etags else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status == 200 and (tag := response.getheader("ETag")):
            etags[path] = tag
        due += plan.delay
    connection.close()


def run_policy(plan: Plan, policy: str, out: Path) -> dict[str, Any]:
    """One run of *policy* on a fresh site, measured from the site's log."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"{policy}: {plan.seconds:.0f} s ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="freshness-") as name:
        tmp = Path(name)
        site_log = tmp / "site.jsonl"
        row: dict[str, Any] = {"policy": policy}
        with changing_site(plan, site_log) as site:
            if policy == "reference":
                reference_crawl(plan, site, site.start["t0"] + plan.seconds)
            else:
                command = crawl_command(plan, policy, site.seeds, tmp)
                result = procs.run_measured(
                    command,
                    logs / f"freshness-{policy}.log",
                    plan.seconds + CRAWL_SLACK,
                )
                row |= {"exit": result.returncode, "timed_out": result.timed_out}
                row |= {"cpu_seconds": round(result.cpu_seconds, 1)}
        shutil.copy(site_log, logs / f"freshness-{policy}-site.jsonl")
        if (tmp / "records.db").exists():  # the URL library, to look into afterwards
            shutil.copy(tmp / "records.db", logs / f"freshness-{policy}-records.db")
        stats_file = tmp / "stats.json"
        stats = json.loads(stats_file.read_text("utf-8")) if stats_file.exists() else {}
    row |= measured(plan, logs / f"freshness-{policy}-site.jsonl")
    row["revisit_stats"] = {k: v for k, v in stats.items() if k.startswith("revisit/")}
    print(f"  freshness {row['freshness']:.3f}, {row['fetches']} fetches, "
          f"exit {row.get('exit')}", flush=True)  # fmt: skip
    return row


def measured(plan: Plan, site_log: Path) -> dict[str, Any]:
    """The figures of one run's site log (``--from-logs`` reads a former run's)."""
    start, rows = read_site_log(site_log)
    return measure(schedule_of(start), start["t0"], rows, plan.window)


def analytic(plan: Plan, runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Expected figures: the optimum at the budget, uniform at its interval, and the
    optimum at the page fetches adaptive made (its allocation, apart from its spend)."""
    start = {"seed": plan.seed, "hosts": plan.hosts, "pages": plan.pages}
    schedule = site_schedule(**start, horizon=plan.seconds + 600)
    rates = [p.rate for p in schedule.values()]
    span = plan.seconds - plan.warmup
    cases: list[tuple[str, list[float | None], float]] = [
        ("optimum (expected)", optimal_intervals(rates, plan.budget), plan.budget),
        ("uniform (expected)", [plan.interval] * len(rates), plan.budget),
    ]
    for run in runs:
        if run["policy"] == "adaptive" and run["page_fetches"]:
            spent = run["page_fetches"] / span
            cases.append(
                ("optimum at adaptive's page fetches", optimal_intervals(rates, spent),
                 spent)
            )  # fmt: skip
    rows = []
    for name, intervals, rate in cases:
        freshness, age = expected(rates, intervals, plan.window)
        rows.append({
            "policy": name, "freshness": freshness, "mean_age": age,
            "fetches": round(rate * span), "bytes": None, "share_304": None,
            "pages_unfetched": sum(t is None for t in intervals),
            "fetches_by_class": per_class(
                rates, [span / t if t else 0.0 for t in intervals]
            ),
        })  # fmt: skip
    return rows


# --- Report -------------------------------------------------------------------------


def table(rows: Sequence[dict[str, Any]]) -> str:
    """policy | freshness | staleness | staleness/uniform | age | fetches | bytes | 304."""
    uniform = next((r for r in rows if r["policy"] == "uniform"), None)
    base = 1 - uniform["freshness"] if uniform else None
    lines = [
        (
            "| policy | freshness | staleness | staleness / uniform | mean age s "
            "| fetches | bytes | 304 share |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        stale = 1 - r["freshness"]
        ratio = f"{stale / base:.2f}" if base else "-"
        sent = f"{r['bytes']:,}" if r.get("bytes") is not None else "-"
        share = f"{r['share_304']:.0%}" if r.get("share_304") is not None else "-"
        lines.append(
            f"| {r['policy']} | {r['freshness']:.3f} | {stale:.3f} | {ratio} "
            f"| {r['mean_age']:.1f} | {r['fetches']:,} | {sent} | {share} |"
        )
    return "\n".join(lines)


def allocation_table(rows: Sequence[dict[str, Any]], pages: dict[str, int]) -> str:
    """Fetches a page got in the window, by change class, for each row."""
    labels = ["never", *(label for _, label in CLASSES)]
    names = [r["policy"] for r in rows]
    lines = [
        "| change class | pages | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(rows),
    ]
    for label in labels:
        if label in pages:
            cells = [f"{r['fetches_by_class'].get(label, 0.0):.1f}" for r in rows]
            lines.append(f"| {label} | {pages[label]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(rows: Sequence[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """The issue's targets for adaptive: (target, met; None: not measured, figures)."""
    by = {r["policy"]: r for r in rows}
    adaptive = by.get("adaptive")
    if adaptive is None:
        return []
    stale = 1 - adaptive["freshness"]
    found: list[tuple[str, bool | None, str]] = []
    if "uniform" in by:
        bound = 0.6 * (1 - by["uniform"]["freshness"])
        found.append(("staleness <= 0.6 x uniform's", stale <= bound,
                      f"{stale:.3f} vs {bound:.3f}"))  # fmt: skip
    if "halving" in by:
        other = 1 - by["halving"]["freshness"]
        found.append(("staleness <= halving's", stale <= other,
                      f"{stale:.3f} vs {other:.3f}"))  # fmt: skip
    best = by["optimum (expected)"]["freshness"]
    found.append(("freshness within 0.05 of the optimum",
                  adaptive["freshness"] >= best - 0.05,
                  f"{adaptive['freshness']:.3f} vs {best:.3f}"))  # fmt: skip
    share = adaptive.get("share_304")
    found.append(("304 share of unchanged revisits >= 80%",
                  None if share is None else share >= 0.8,
                  "-" if share is None else f"{share:.0%} of "
                  f"{adaptive['unchanged_revisits']}"))  # fmt: skip
    return found


def machine_facts() -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=None, help="6 (quick: 2.5)")
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=None, help="50 (quick: 20)")
    parser.add_argument("--delay", type=float, default=0.5, help="D, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help="among off, uniform, adaptive, halving, reference")  # fmt: skip
    parser.add_argument("--validators", default="both",
                        choices=("both", "etag", "last-modified", "none"))  # fmt: skip
    parser.add_argument("--warmup", type=float, default=1 / 3,
                        help="share of the run before the window")  # fmt: skip
    parser.add_argument(
        "--min-interval",
        type=float,
        default=None,
        help="REVISIT_MIN_INTERVAL (interval / 24, as the defaults)",
    )
    parser.add_argument(
        "--max-interval",
        type=float,
        default=None,
        help="REVISIT_MAX_INTERVAL (interval x 14, as the defaults)",
    )
    parser.add_argument(
        "--feed-interval",
        type=float,
        default=None,
        help="REVISIT_FEED_INTERVAL (default: the crawler's, 2 s)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--from-logs",
        type=Path,
        default=None,
        help="measure the site logs of a former run in this directory (same options)",
    )
    args = parser.parse_args(argv)
    args.minutes = args.minutes or (2.5 if args.quick else 6.0)
    args.pages = args.pages or (20 if args.quick else 50)
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if args.delay <= 0 or not 0 <= args.warmup < 1 or not args.policies:
        parser.error("need --delay > 0, 0 <= --warmup < 1 and a policy")
    return args


def plan_of(args: argparse.Namespace) -> Plan:
    seconds = args.minutes * 60
    interval = (args.pages + 1) * args.delay
    return Plan(
        args.hosts, args.pages, args.delay, args.seed, seconds, seconds * args.warmup,
        args.validators, args.min_interval or interval / 24,
        args.max_interval or interval * 14, args.feed_interval,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plan = plan_of(args)
    print(f"Site: {plan.hosts} hosts x {plan.pages} pages (+ an index each), D = "
          f"{plan.delay} s: budget {plan.budget:g} fetches/s, uniform interval "
          f"{plan.interval:g} s, bounds {plan.min_interval:g}..{plan.max_interval:g} "
          f"s; {plan.seconds:g} s a run, window {plan.warmup:g}..{plan.seconds:g} s; "
          f"feed interval {plan.feed_interval or 'the default'}")  # fmt: skip
    code = code_fingerprint()
    if args.from_logs is not None:
        rows = [
            {"policy": p} | measured(plan, args.from_logs / f"freshness-{p}-site.jsonl")
            for p in args.policies
        ]
    else:
        rows = [run_policy(plan, policy, args.out) for policy in args.policies]
    rows += analytic(plan, rows)
    text = table(rows)
    checks = targets(rows)
    schedule = site_schedule(plan.seed, plan.hosts, plan.pages, plan.seconds + 600)
    classes = [change_class(p.rate) for p in schedule.values()]
    allocation = allocation_table(rows, {c: classes.count(c) for c in set(classes)})
    print()
    print(text)
    print("\nFetches a page got in the window, by mean time between its changes:\n")
    print(allocation)
    print()
    for name, met, figures in checks:
        verdict = "not measured" if met is None else ("PASS" if met else "FAIL")
        print(f"{verdict:>12}  adaptive {name}: {figures}")
    if any(met is False for _, met, _ in checks):
        print("Some targets were missed (a benchmark: exit status 0 all the same).")
    results = {
        "command": " ".join(["python -m bench.freshness", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        "plan": vars(plan) | {"budget": plan.budget, "interval": plan.interval},
        "machine": machine_facts(),
        "crawler_code": code,
        "table": text,
        "allocation": allocation,
        "targets": [{"target": n, "met": m, "figures": f} for n, m, f in checks],
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "freshness.json"
    path.write_text(json.dumps(results, indent=1), "utf-8")
    print(f"\nWrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
