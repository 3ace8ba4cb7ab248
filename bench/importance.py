"""The importance benchmark: which crawl order fetches the most PageRank first.

``python -m bench.importance [--quick] [--shape NAME] [--orders a,b]``

A simulated web (``bench.simweb``, default ``mixed-20k``; ``--quick``:
``mixed-4k``) is served on one loopback address per host
(``bench.importancesite``), each response after a 20-100 ms latency, and crawled
by this crawler (``scrapy crawl bfs``, ``scope=any``, but names resolve only to the
web's own hosts: ``bench.importancedns``), once per order, all under the same
politeness (one request per host, 0.5 s between two of them) and concurrency (16),
up to a page budget (half the pages): ``bfs``, ``importance`` (the default alpha,
beta and credits), ``count`` and ``opic`` (``IMPORTANCE_BACKLINKS``), and ``omni``
(``FRONTIER_ORDER=priority``, each request's priority from its URL's true PageRank
rank: ``bench.importanceprio``). The order of first fetches is read at the server;
reported: the share of the web's total PageRank fetched after 5, 10, 20 and 50% of
its pages, the share of the gap between bfs and omni each order closes at 5 and
10%, and pages/s (first fetches over the span from the first to the last of them).
Writes ``bench/out/importance.json`` (``importance-quick.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench import importancesite, procs, run, simweb
from bench.crawls import CrawlSpec, command
from bench.importancesim import POINTS, closure
from crawler.crawlstate.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import FrameType

    from bench.importancesite import Hit, SimSite

PORT = 8977
LOG_SETTLE = 0.5  # s: the last responses of a crawl reach the log
PRIORITY_MIDDLEWARE = "bench.importanceprio.PageRankPriority"
# Each order's own settings, over the shared ones.
ORDERS: dict[str, dict[str, Any]] = {
    "bfs": {"FRONTIER_ORDER": "bfs"},
    "importance": {"FRONTIER_ORDER": "importance"},
    "count": {"FRONTIER_ORDER": "importance", "IMPORTANCE_BACKLINKS": "count"},
    "opic": {"FRONTIER_ORDER": "importance", "IMPORTANCE_BACKLINKS": "opic"},
    "omni": {
        "FRONTIER_ORDER": "priority",
        "SPIDER_MIDDLEWARES": {PRIORITY_MIDDLEWARE: 990},
    },
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    shapes = [shape.name for shape in simweb.SHAPES]
    parser.add_argument("--quick", action="store_true", help="the mixed-4k web")
    parser.add_argument("--shape", choices=shapes, default=None)
    parser.add_argument("--orders", default=",".join(ORDERS))
    parser.add_argument("--budget", type=float, default=max(POINTS))
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--timeout", type=float, default=900.0, help="s a crawl")
    parser.add_argument("--out", type=Path, default=run.OUT)
    args = parser.parse_args(argv)
    args.shape = args.shape or ("mixed-4k" if args.quick else "mixed-20k")
    args.orders = [name.strip() for name in args.orders.split(",") if name.strip()]
    if not args.orders or set(args.orders) - set(ORDERS):
        parser.error(f"--orders: choose among {', '.join(ORDERS)}")
    if not 0 < args.budget <= 1:
        parser.error("--budget is a share of the pages, in (0, 1]")
    return args


@dataclass(frozen=True)
class Bench:
    """What every crawl needs: the web, its files, the site and the private Redis."""

    args: argparse.Namespace
    web: simweb.Web
    rank: list[float]
    workdir: Path
    site: SimSite
    server: EmbeddedRedis
    client: redis.Redis


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    shape = next(s for s in simweb.SHAPES if s.name == args.shape)
    started = time.monotonic()
    web = simweb.build(shape)
    rank = simweb.pagerank(web.links)
    print(
        f"Web {shape.name}: {len(web.paths)} pages on {len(web.hosts)} hosts, "
        f"{sum(map(len, web.links))} links ({time.monotonic() - started:.1f} s)",
        flush=True,
    )
    with lab(args, web, rank) as bench:
        facts = run.machine_facts(bench.client)
        results = [crawl(bench, name) for name in args.orders]
    facts["crawler_code"] = run.code_fingerprint()
    return finish(args, web, results, facts)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds: the crawl, the site and Redis stop


@contextlib.contextmanager
def lab(
    args: argparse.Namespace, web: simweb.Web, rank: list[float]
) -> Iterator[Bench]:
    """The web served, its tables written, a private redis-server, until the end."""
    with tempfile.TemporaryDirectory(prefix="importance-") as tmp:
        workdir = Path(tmp)
        (workdir / "hosts.json").write_text(json.dumps(web.addresses()))
        table = {web.url(p, args.port): rank[p] for p in range(len(web.paths))}
        (workdir / "pagerank.json").write_text(json.dumps(table))
        (workdir / "redis").mkdir()
        server = EmbeddedRedis(workdir / "redis", persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            with importancesite.serving(web, args.port) as site:
                yield Bench(args, web, rank, workdir, site, server, client)
        finally:
            client.close()
            server.stop()


def settings(bench: Bench, name: str) -> dict[str, Any]:
    """The crawl's settings: the shared politeness and budget, then the order's."""
    args, pages = bench.args, len(bench.web.paths)
    shared: dict[str, Any] = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "FRONTIER_HOST_CONCURRENCY": 1,
        "DOWNLOAD_DELAY": args.delay,  # the add-on makes it POLITENESS_MIN_DELAY
        "POLITENESS_DAY_DELAY": args.delay,
        "POLITENESS_NIGHT_DELAY": args.delay,
        "POLITENESS_JITTER": 0,
        # The budget, and a few more: the curve is read from the first fetches.
        "CLOSESPIDER_PAGECOUNT": round(args.budget * pages) + args.concurrency,
        "ITEM_PIPELINES": {},
        "TWISTED_DNS_RESOLVER": "bench.importancedns.TableResolver",
        "BENCH_HOSTS_FILE": str(bench.workdir / "hosts.json"),
        "BENCH_PAGERANK_FILE": str(bench.workdir / "pagerank.json"),
    }
    return shared | ORDERS[name]


def crawl(bench: Bench, name: str) -> dict[str, Any]:
    """One crawl in order *name*: its capture curve and pages/s, read at the server."""
    args = bench.args
    bench.client.flushall()
    bench.site.take_hits()
    workdir = Path(tempfile.mkdtemp(prefix=f"importance-{name}-", dir=bench.workdir))
    seeds = ",".join(bench.web.url(page, args.port) for page in bench.web.seeds)
    spec = CrawlSpec(
        seed=seeds,
        redis_url=bench.server.url,
        total_pages=2 * len(bench.web.paths),
        timeout=args.timeout,
        stats_file=workdir / "stats.json",
        extra=settings(bench, name),
    )
    crawl_command = command("frontier", spec)
    crawl_command.argv.extend(["-a", "scope=any"])
    for key in [k for k in crawl_command.env if k.lower().endswith("_proxy")]:
        del crawl_command.env[key]  # straight to loopback, as bench.realcrawls
    log = args.out / "importance-logs" / f"{name}.log"
    result = procs.run_measured(crawl_command, log, args.timeout)
    time.sleep(LOG_SETTLE)
    hits = bench.site.take_hits()
    stats = run._read_stats(workdir / "stats.json")
    shutil.rmtree(workdir, ignore_errors=True)
    figures = measure(name, hits, bench.rank, args.budget)
    figures |= {
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "wall_seconds": round(result.wall_seconds, 1),
        "cpu_seconds": round(result.cpu_seconds, 1),
        "finish_reason": stats.get("finish_reason"),
    }
    _print_run(figures)
    return figures


def first_fetches(hits: Sequence[Hit]) -> list[tuple[float, int]]:
    """(time, page) of each page's first 200 answer, in the order sent."""
    seen: set[int] = set()
    order = []
    for hit in hits:
        if hit.status == 200 and hit.page >= 0 and hit.page not in seen:
            seen.add(hit.page)
            order.append((hit.time, hit.page))
    return order


def measure(
    name: str, hits: Sequence[Hit], rank: Sequence[float], budget: float
) -> dict[str, Any]:
    """The share of total PageRank fetched at each point (a share of all the
    pages), pages/s over the budget, and what else the server saw."""
    order = first_fetches(hits)
    total = len(rank)
    marks = [round(point * total) for point in POINTS]
    captured, shares = 0.0, []
    for index, (_, page) in enumerate(order, start=1):
        captured += rank[page]
        if index in marks:
            shares.append(round(captured, 4))
    within = order[: round(budget * total)]
    span = within[-1][0] - within[0][0] if len(within) > 1 else 0.0
    return {
        "order": name,
        "pages": len(order),
        "shares": shares + [None] * (len(POINTS) - len(shares)),
        "pages_per_second": round((len(within) - 1) / span, 1) if span else None,
        "min_host_gap": min_host_gap(hits),
        "responses": len(hits),
        "repeats": sum(1 for h in hits if h.status == 200) - len(order),
        "not_found": sum(1 for h in hits if h.status != 200),
        "first_fetches": [page for _, page in within],
    }


def min_host_gap(hits: Sequence[Hit]) -> float | None:
    """The shortest time between two responses of one host (s): politeness, as
    the server saw it (each response is sent after its latency)."""
    last: dict[str, float] = {}
    gap: float | None = None
    for hit in hits:
        host = hit.path.split("/", 1)[0]
        if host in last:
            step = hit.time - last[host]
            gap = step if gap is None else min(gap, step)
        last[host] = hit.time
    return None if gap is None else round(gap, 3)


def _print_run(f: dict[str, Any]) -> None:
    shares = " ".join("-" if s is None else f"{s:.3f}" for s in f["shares"])
    print(
        f"  {f['order']}: {f['pages']} pages, shares {shares}, "
        f"{f['pages_per_second']} pages/s, {f['repeats']} repeats, "
        f"closest host gap {f['min_host_gap']} s, "
        f"{f['not_found']} not 200, exit {f['returncode']} ({f['finish_reason']}), "
        f"{f['wall_seconds']} s, CPU {f['cpu_seconds']} s",
        flush=True,
    )


def gaps(results: Sequence[dict[str, Any]]) -> dict[str, list[float | None]]:
    """Each order's closure of the bfs-omni gap at 5% and 10%."""
    by_name = {r["order"]: r["shares"] for r in results}
    bfs, omni = by_name.get("bfs"), by_name.get("omni")
    out: dict[str, list[float | None]] = {}
    for name, shares in by_name.items():
        out[name] = [
            None
            if bfs is None or omni is None or None in (shares[i], bfs[i], omni[i])
            else round(closure(shares[i], bfs[i], omni[i]), 2)
            for i in (0, 1)
        ]
    return out


def table(results: Sequence[dict[str, Any]]) -> str:
    closures = gaps(results)
    lines = [
        "| order | 5% | 10% | 20% | 50% | gap 5% | gap 10% | pages/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cells = ["-" if s is None else f"{s:.3f}" for s in r["shares"]]
        cells += ["-" if g is None else f"{g:.2f}" for g in closures[r["order"]]]
        lines.append(
            f"| {r['order']} | {' | '.join(cells)} | {r['pages_per_second']} |"
        )
    return "\n".join(lines)


def finish(
    args: argparse.Namespace,
    web: simweb.Web,
    results: list[dict[str, Any]],
    facts: dict[str, Any],
) -> int:
    print()
    print(table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / ("importance-quick.json" if args.quick else "importance.json")
    report = {
        "web": {
            "shape": web.shape.name,
            "pages": len(web.paths),
            "hosts": len(web.hosts),
            "links": sum(map(len, web.links)),
        },
        "settings": {
            "delay": args.delay,
            "concurrency": args.concurrency,
            "budget": args.budget,
        },
        "results": results,
        "gaps": gaps(results),
        "machine": facts,
    }
    path.write_text(json.dumps(report, indent=2))
    print(f"\nWrote {path}")
    bad = [r["order"] for r in results if r["returncode"] != 0 or r["timed_out"]]
    if bad:
        print(f"Crawls that did not end well: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
