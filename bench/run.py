"""Benchmark: the Redis frontier vs plain Scrapy vs scrapy-redis on the local site.

``python -m bench.run [--hosts 20] [--pages 1000] [--links 20] [--runs 1] [--quick]``

Starts a private redis-server and ``tests.site``, crawls the whole site once per
crawler and run (each crawl its own ``scrapy`` process, one after another, same
concurrency settings), then measures Redis bytes per queued request by running each
Redis scheduler without fetching, and then the seen-URL filter's bytes per URL at
scale the same way (``--dedup-urls`` URLs over ``--dedup-hosts`` hosts, so that every
shard gets URLs; the in-crawl figure covers only the few shards of the site's hosts).
Prints two tables and writes ``bench/out/results.json``.

Plain Scrapy and scrapy-redis crawl with a CrawlSpider and Scrapy's LinkExtractor
(``bench/plainspiders.py``), as their users write them; ``plain-bfs`` is the
project's ``bfs`` spider under Scrapy's own scheduler, so frontier / plain-bfs is
the frontier's share alone; ``frontier+metrics`` is the frontier's crawl with its
Prometheus endpoint on, scraped every second (what watching a node costs; the scrape
alone: ``python -m bench.metricscost``). No crawl runs item pipelines.

Seconds are from the crawl's first to its last response (``wall s``: process start
to exit); CPU is the crawler process' user + system time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psutil
import redis

from bench import metricsscrape, procs, redisprobe, report
from bench.crawls import BENCH, FRONTIER_PREFIX, ROOT, CrawlSpec, command
from bench.crawls import CRAWLERS as CRAWLS
from bench.realcrawls import PLAIN_SPIDER
from crawler.crawlstate.embedded import EmbeddedRedis, redis_server_binary

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

OUT = BENCH / "out"
QUEUE_COST_TIMEOUT = 600.0
REDIS_CRAWLERS = ("frontier", "scrapy-redis")
# Crawls of this benchmark that run another's scheduler with another spider, or the
# frontier with its metrics endpoint on, scraped every second (bench/metricsscrape.py).
METRICS_CRAWL = "frontier+metrics"
# The frontier's crawl in FRONTIER_ORDER=importance (what counting in-links costs).
IMPORTANCE_CRAWL = "frontier+importance"
SCHEDULER_OF = {
    "plain-bfs": "plain",
    METRICS_CRAWL: "frontier",
    IMPORTANCE_CRAWL: "frontier",
}
CRAWLERS = (*CRAWLS, "plain-bfs", METRICS_CRAWL, IMPORTANCE_CRAWL)


@dataclass(frozen=True)
class Bench:
    """Everything a crawl run needs from the benchmark around it."""

    args: argparse.Namespace
    client: redis.Redis
    server: EmbeddedRedis
    site: procs.Site
    total_pages: int


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=None, help="default 20 (5 quick)")
    parser.add_argument("--pages", type=int, default=None, help="default 1000 (200)")
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--cross", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=1, help="crawls per crawler")
    parser.add_argument("--quick", action="store_true", help="a 5 x 200 smoke run")
    parser.add_argument(
        "--only", default=",".join(CRAWLERS), help="comma-separated crawlers to run"
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds a crawl may take"
    )
    parser.add_argument(
        "--queue-requests",
        type=int,
        default=None,
        help="requests pushed to measure bytes per queued request (20000; 2000 quick)",
    )
    parser.add_argument(
        "--dedup-urls",
        type=int,
        default=None,
        help="URLs pushed to measure the seen filter at scale (200000; 20000 quick)",
    )
    parser.add_argument(
        "--dedup-hosts",
        type=int,
        default=None,
        help="hosts they are spread over (10000; 2000 quick)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run crawls under cProfile (slower: timings are not comparable)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.hosts = args.hosts or (5 if args.quick else 20)
    args.pages = args.pages or (200 if args.quick else 1000)
    args.queue_requests = args.queue_requests or (2000 if args.quick else 20_000)
    args.dedup_urls = args.dedup_urls or (20_000 if args.quick else 200_000)
    args.dedup_hosts = args.dedup_hosts or (2000 if args.quick else 10_000)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(args.only) - set(CRAWLERS)
    if unknown or not args.only or not 1 <= args.runs <= 20:
        parser.error(f"need --runs in 1..20 and --only among {', '.join(CRAWLERS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    total = args.hosts * args.pages
    print(f"Site: {args.hosts} hosts x {args.pages} pages = {total} pages, "
          f"{args.links} links a page; crawlers: {', '.join(args.only)}")  # fmt: skip
    code = code_fingerprint()
    shape = procs.SiteShape(args.hosts, args.pages, args.links, args.cross)
    with procs.lab(ROOT, shape) as lab:
        bench = Bench(args, lab.client, lab.server, lab.site, total)
        runs = [
            run_crawl(bench, name, index)
            for index in range(args.runs)
            for name in args.only
        ]
        costs = queue_costs(bench)
        dedup = dedup_at_scale(bench)
        facts = machine_facts(lab.client)
    facts["crawler_code"] = code
    if code_fingerprint() != code:
        runs[-1]["warnings"].append(
            "crawler/ changed while the benchmark ran: the crawls may have run "
            "different code (crawler_code is the state at the start)"
        )
    return finish(args, runs, costs, dedup, facts)


def finish(
    args: argparse.Namespace,
    runs: list[dict[str, Any]],
    costs: dict[str, Any],
    dedup: dict[str, Any],
    facts: dict[str, Any],
) -> int:
    rows = report.median_runs(runs)
    report.add_queue_costs(rows, costs)
    text = report.table(rows)
    warnings = [w for run in runs for w in run["warnings"]]
    print()
    print(text)
    for name, cost in costs.items():
        print(f"{name}: {cost['bytes_per_request_queue']:.0f} B/queued request "
              f"(queues), {cost['bytes_per_request_total']:.0f} B with its seen "
              f"filter, {cost['requests']} requests pushed")  # fmt: skip
    dedup_text = report.dedup_table(dedup) if dedup else ""
    if dedup:
        print("\nSeen-URL filter at scale (default error rate, capacity = URLs):")
        print(dedup_text)
        for line in report.dedup_notes(dedup):
            print(line)
    for warning in warnings:
        print(f"WARNING: {warning}")
    results = {
        "command": " ".join([".venv/bin/python -m bench.run", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        "machine": facts,
        "table": text,
        "summary": rows,
        "pages_per_second_over_runs": report.summary_of_runs(runs),
        "queue_cost": costs,
        "dedup_at_scale_table": dedup_text,
        "dedup_at_scale": dedup,
        "runs": runs,
        "warnings": warnings,
    }
    report.write_json(args.out / "results.json", results)
    print(f"\nWrote {args.out / 'results.json'}")
    return 1 if warnings else 0


def run_crawl(bench: Bench, name: str, index: int) -> dict[str, Any]:
    """One crawl of the whole site by *name*, measured."""
    args, client = bench.args, bench.client
    client.flushall()
    tag = f"{name}-{index + 1}"
    stats_file = args.out / "stats" / f"{tag}.json"
    stats_file.unlink(missing_ok=True)
    profile = args.out / "profile" / f"{tag}.prof" if args.profile else None
    if profile is not None:
        profile.parent.mkdir(parents=True, exist_ok=True)
    metrics_port = metricsscrape.free_port() if name == METRICS_CRAWL else None
    spec = CrawlSpec(
        bench.site.seeds[0], bench.server.url, bench.total_pages, args.timeout,
        stats_file, profile, **spider_of(name, bench.site, metrics_port),
    )  # fmt: skip
    print(f"Crawl {tag} ...", flush=True)
    redis_cpu = procs.cpu_seconds(bench.server.pid)
    site_cpu = procs.cpu_seconds(bench.site.process.pid)
    before = redisprobe.activity(client)
    with scraping(metrics_port) as scrapes:
        result = procs.run_measured(
            command(SCHEDULER_OF.get(name, name), spec),
            args.out / "logs" / f"{tag}.log",
            args.timeout,
        )
    activity = redisprobe.activity(client) - before
    run = {
        "crawler": name,
        "run": index + 1,
        "process": asdict(result),
        "redis_cpu_seconds": procs.cpu_seconds(bench.server.pid) - redis_cpu,
        "site_cpu_seconds": procs.cpu_seconds(bench.site.process.pid) - site_cpu,
        "profiled": profile is not None,
    }
    run |= figures(name, result, _read_stats(stats_file), activity)
    run |= redis_figures(client, SCHEDULER_OF.get(name, name), run["pages"], activity)
    if scrapes is not None:
        run["metrics_scrapes"] = asdict(scrapes)
        print(f"  /metrics scraped {scrapes.answered} times during the crawl")
    run["warnings"] = check(tag, run, bench.total_pages, result)
    if profile is not None and profile.exists():
        run["profile_text"] = str(write_profile_text(profile))
    print(f"  {run['pages']} pages in {run['seconds']:.1f} s = "
          f"{run['pages_per_second']:.0f} pages/s, CPU {result.cpu_seconds:.1f} s",
          flush=True)  # fmt: skip
    return run


@contextlib.contextmanager
def scraping(port: int | None) -> Iterator[metricsscrape.Scrapes | None]:
    """Scrape the crawl's metrics every second while it runs, if it serves them."""
    if port is None:
        yield None
        return
    with metricsscrape.scraping(port) as scrapes:
        yield scrapes


def spider_of(
    name: str, site: procs.Site, metrics_port: int | None = None
) -> dict[str, Any]:
    """The spider of crawl *name*: plain Scrapy's and scrapy-redis' crawls run a
    CrawlSpider with Scrapy's LinkExtractor, as their users write them, on every
    host of the site; ``plain-bfs`` runs the project's spider under Scrapy's
    scheduler, so that frontier / plain-bfs is the scheduler's share alone. No
    crawl runs item pipelines (the frontier's page store and records database
    are off: the others keep nothing either). ``frontier+metrics`` serves its
    metrics on *metrics_port*; ``frontier+importance`` crawls in importance
    order."""
    if name in ("plain", "scrapy-redis"):
        hosts = ",".join(urlsplit(seed).netloc for seed in site.seeds)
        return {"spider_file": PLAIN_SPIDER, "spider_args": {"hosts": hosts}}
    extra: dict[str, Any] = {"ITEM_PIPELINES": {}}
    if metrics_port is not None:
        extra |= {"METRICS_PORT": metrics_port, "METRICS_HOST": metricsscrape.HOST}
    if name == IMPORTANCE_CRAWL:
        extra |= {"FRONTIER_ORDER": "importance"}
    return {"extra": extra}


def _read_stats(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    stats: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return stats


def figures(
    name: str,
    result: procs.ProcessResult,
    stats: dict[str, Any],
    activity: redisprobe.Activity,
) -> dict[str, Any]:
    """Pages, time, rate, CPU and memory of one crawl, from its stats and process."""
    pages = int(stats.get("response_received_count", 0))
    first = stats.get("bench/first_response_time")
    last = stats.get("bench/last_response_time")
    seconds = last - first if first is not None and last is not None else 0.0
    seconds = seconds or result.wall_seconds
    return {
        "pages": pages,
        "items": int(stats.get("item_scraped_count", 0)),
        "finish_reason": stats.get("finish_reason"),
        "seconds": seconds,
        "wall_seconds": result.wall_seconds,
        "pages_per_second": pages / seconds if seconds else 0.0,
        "cpu_seconds": result.cpu_seconds,
        "cpu_ms_per_page": 1000 * result.cpu_seconds / pages if pages else None,
        "peak_rss_mb": result.peak_rss_bytes / 2**20,
        "stats": stats,
    }


def redis_figures(
    client: redis.Redis, name: str, pages: int, activity: redisprobe.Activity
) -> dict[str, Any]:
    """Seen-filter size and Redis traffic of a crawl that used Redis."""
    if name not in REDIS_CRAWLERS:
        return {
            "redis_cpu_seconds": None,
            "redis_bytes_per_seen_url": None,
            "redis_round_trips_per_page": None,
        }
    dedup, keys = redisprobe.dedup_bytes(client, name)
    figures: dict[str, Any] = {
        "redis_dedup_bytes": dedup,
        "redis_dedup_keys": keys,
        "redis_bytes_per_seen_url": dedup / pages if pages else None,
        # Minus the INFO call that read the counters at the end.
        "redis_round_trips": activity.reads - 1,
        "redis_round_trips_per_page": (activity.reads - 1) / pages if pages else None,
        "redis_commands_per_page": activity.commands / pages if pages else None,
        "redis_used_memory_after_crawl": redisprobe.used_memory(client),
    }
    if name == "frontier":
        layouts, _ = redisprobe.pattern_bytes(client, FRONTIER_PREFIX + ":{s*}:seen")
        figures["redis_dedup_layout_bytes"] = layouts
        figures["redis_dedup_bitmap_bytes"] = dedup - layouts
        figures["redis_bitmap_bytes_per_seen_url"] = (
            (dedup - layouts) / pages if pages else None
        )
    return figures


def check(
    tag: str, run: dict[str, Any], total: int, result: procs.ProcessResult
) -> list[str]:
    """What went wrong with a crawl, one line each."""
    warnings = []
    if result.timed_out:
        warnings.append(
            f"{tag}: killed at the timeout, the crawl did not end by itself"
        )
    if result.returncode != 0:
        warnings.append(f"{tag}: exit status {result.returncode}")
    if run["pages"] != total:
        warnings.append(
            f"{tag}: fetched {run['pages']} pages, the site has {total} "
            f"({total - run['pages']} missing)"
        )
    if run["finish_reason"] != "finished":
        warnings.append(f"{tag}: finish_reason {run['finish_reason']!r}")
    return warnings


def write_profile_text(profile: Path) -> Path:
    """The top functions of a cProfile dump, by own time and by cumulative time."""
    import io  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    text = io.StringIO()
    stats = pstats.Stats(str(profile), stream=text)
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumulative").print_stats(60)
    path = profile.with_suffix(".txt")
    path.write_text(text.getvalue(), "utf-8")
    return path


def queue_costs(bench: Bench) -> dict[str, Any]:
    """Bytes per queued request of each Redis scheduler that was benchmarked."""
    args = bench.args
    return _run_queue_cost(bench, "Queue cost", args.queue_requests, args.hosts)


def dedup_at_scale(bench: Bench) -> dict[str, Any]:
    """Seen-filter bytes per URL of each Redis scheduler, URLs in every shard."""
    args = bench.args
    return _run_queue_cost(bench, "Dedup at scale", args.dedup_urls, args.dedup_hosts)


def _run_queue_cost(
    bench: Bench, label: str, requests: int, hosts: int
) -> dict[str, Any]:
    """``bench.queue_cost`` of each benchmarked Redis scheduler, by name."""
    costs = {}
    for name in REDIS_CRAWLERS:
        if name not in bench.args.only:
            continue
        argv = [
            sys.executable, "-m", "bench.queue_cost", "--redis-url", bench.server.url,
            "--scheduler", name, "--requests", str(requests),
            "--hosts", str(hosts), "--port", str(bench.site.port),
        ]  # fmt: skip
        print(f"{label} {name} ({requests} requests, {hosts} hosts) ...", flush=True)
        done = subprocess.run(
            argv, cwd=ROOT, capture_output=True, text=True,
            timeout=max(QUEUE_COST_TIMEOUT, requests / 1000), check=False,
        )  # fmt: skip
        if done.returncode != 0:
            print(f"WARNING: {label.lower()} of {name} failed:\n{done.stderr[-2000:]}")
            continue
        costs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return costs


def machine_facts(client: redis.Redis) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "nproc": psutil.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {
            name: _version(name)
            for name in ("scrapy", "scrapy-redis", "redis", "hiredis", "twisted")
        },
        "redis_server": redisprobe.server_version(client),
        "redis_server_binary": redis_server_binary(),
    }


def machine_facts_standalone() -> dict[str, Any]:
    """``machine_facts`` for a bench with no Redis of its own at hand: a short-lived
    private server tells its version."""
    with tempfile.TemporaryDirectory(prefix="bench-facts-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            return machine_facts(client)
        finally:
            client.close()
            server.stop()


def code_fingerprint() -> dict[str, Any]:
    """SHA-256 of every crawler/**/*.py (path and content): which code was measured."""
    digest = hashlib.sha256()
    files = sorted((ROOT / "crawler").rglob("*.py"))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    newest = max((path.stat().st_mtime for path in files), default=0.0)
    return {
        "sha256": digest.hexdigest()[:16],
        "files": len(files),
        "newest_mtime": dt.datetime.fromtimestamp(newest, dt.UTC).isoformat(
            timespec="seconds"
        ),
    }


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text("utf-8")
    except OSError:
        return platform.processor()
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
