"""Benchmark: throughput against H/D while every host is fetched at most every D s.

``python -m bench.politeness [--hosts 40] [--delay 0.5] [--pages 40] [--runs 1]``

Crawls the local site (H hosts) once per crawler: the frontier with its day and night
delays both set to D (no jitter, so D is the delay in force), plain Scrapy and
scrapy-redis with ``DOWNLOAD_DELAY=D`` (Scrapy's default randomisation, 0.5-1.5 x D).
Every figure comes from the site's own request log: pages a second from the first to
the last page fetched, and the gaps between two fetches of one host. The target is at
least 0.9 x H/D pages a second with no gap below D. ``--lookahead=-1,0`` adds a
frontier crawl with the strict BFS barrier; ``--robots`` has the frontier obey
robots.txt, as it does by default.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import procs
from bench.crawls import BENCH, CRAWLERS, ROOT, CrawlSpec, command
from bench.run import code_fingerprint, machine_facts
from tests.site import read_log

if TYPE_CHECKING:
    from collections.abc import Sequence

OUT = BENCH / "out"
TARGET = 0.9


@dataclass(frozen=True)
class Variant:
    """One crawl configuration: a crawler and the settings that make it polite."""

    label: str
    crawler: str
    settings: dict[str, Any]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.5, help="D, in seconds")
    parser.add_argument("--pages", type=int, default=40, help="pages a host")
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--cross", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=1, help="crawls per variant")
    parser.add_argument(
        "--lookahead",
        default="-1",
        help="comma-separated FRONTIER_BFS_LOOKAHEAD values of the frontier crawls",
    )
    parser.add_argument(
        "--jitter", type=float, default=0.0, help="the frontier's POLITENESS_JITTER"
    )
    parser.add_argument(
        "--only", default=",".join(CRAWLERS), help="comma-separated crawlers to run"
    )
    parser.add_argument(
        "--robots",
        action="store_true",
        help="the frontier obeys robots.txt, as by default (the site answers 404)",
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    args.lookahead = [int(v) for v in args.lookahead.split(",") if v.strip()]
    if set(args.only) - set(CRAWLERS) or args.delay <= 0 or args.runs < 1:
        parser.error(f"need --delay > 0, --runs >= 1, --only among {CRAWLERS}")
    return args


def variants(args: argparse.Namespace) -> list[Variant]:
    """The frontier at each lookahead, then the baselines at DOWNLOAD_DELAY=D."""
    found = []
    if "frontier" in args.only:
        for lookahead in args.lookahead:
            settings = {
                "POLITENESS_DAY_DELAY": args.delay,
                "POLITENESS_NIGHT_DELAY": args.delay,
                "POLITENESS_JITTER": args.jitter,
                "FRONTIER_HOST_CONCURRENCY": 1,
                "FRONTIER_BFS_LOOKAHEAD": lookahead,
                "ROBOTSTXT_OBEY": args.robots,
            }
            found.append(Variant(f"frontier L={lookahead}", "frontier", settings))
    for name in ("plain", "scrapy-redis"):
        if name in args.only:
            found.append(Variant(name, name, {"DOWNLOAD_DELAY": args.delay}))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    ideal = args.hosts / args.delay
    print(f"Site: {args.hosts} hosts x {args.pages} pages, D = {args.delay} s: "
          f"H/D = {ideal:.1f} pages/s, target {TARGET * ideal:.1f}")  # fmt: skip
    code = code_fingerprint()
    shape = procs.SiteShape(args.hosts, args.pages, args.links, args.cross)
    with procs.lab(ROOT, shape, log=True) as lab:
        rows = [
            crawl(args, variant, index, lab)
            for index in range(args.runs)
            for variant in variants(args)
        ]
        facts = machine_facts(lab.client)
    facts["crawler_code"] = code
    return finish(args, rows, facts)


def crawl(
    args: argparse.Namespace, variant: Variant, index: int, lab: procs.Lab
) -> dict[str, Any]:
    """One crawl of the whole site, measured from the site's request log."""
    lab.client.flushall()
    assert lab.log is not None
    log = lab.log
    seen = len(read_log(log)) if log.exists() else 0
    tag = f"{variant.label.replace(' ', '_').replace('=', '')}-{index + 1}"
    spec = CrawlSpec(
        lab.site.seeds[0], lab.server.url, args.hosts * args.pages, args.timeout,
        args.out / "stats" / f"polite-{tag}.json", extra=variant.settings,
    )  # fmt: skip
    print(f"Crawl {variant.label} #{index + 1} ...", flush=True)
    result = procs.run_measured(
        command(variant.crawler, spec), args.out / "logs" / f"polite-{tag}.log",
        args.timeout,
    )  # fmt: skip
    row = {"crawler": variant.label, "run": index + 1, "exit": result.returncode}
    row |= measure(read_log(log)[seen:], args)
    print(f"  {row['pages']} pages in {row['seconds']:.1f} s = "
          f"{row['pages_per_second']:.1f} pages/s ({row['of_ideal']:.2f} x H/D), "
          f"smallest gap {row['min_gap']:.3f} s", flush=True)  # fmt: skip
    return row


def measure(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Rate and per-host gaps of one crawl's page fetches, as the site saw them."""
    pages = [r for r in rows if r["path"] != "/robots.txt"]
    last: dict[str, float] = {}
    gaps: list[float] = []
    for row in pages:
        if row["host"] in last:
            gaps.append(row["t"] - last[row["host"]])
        last[row["host"]] = row["t"]
    seconds = pages[-1]["t"] - pages[0]["t"] if len(pages) > 1 else 0.0
    rate = (len(pages) - 1) / seconds if seconds else 0.0
    gaps.sort()
    return {
        "pages": len(pages),
        "seconds": seconds,
        "pages_per_second": rate,
        "of_ideal": rate / (args.hosts / args.delay),
        "min_gap": gaps[0] if gaps else 0.0,
        "p01_gap": gaps[len(gaps) // 100] if gaps else 0.0,
        "median_gap": gaps[len(gaps) // 2] if gaps else 0.0,
        "gaps_below_delay": sum(g < args.delay for g in gaps),
        "gaps": len(gaps),
    }


def finish(
    args: argparse.Namespace, rows: list[dict[str, Any]], facts: dict[str, Any]
) -> int:
    header = (
        f"{'crawler':<16} {'pages':>6} {'s':>7} {'pages/s':>8} {'x H/D':>6} "
        f"{'min gap':>8} {'p1 gap':>7} {'med gap':>8} {'gaps < D':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['crawler']:<16} {r['pages']:>6} {r['seconds']:>7.1f} "
            f"{r['pages_per_second']:>8.1f} {r['of_ideal']:>6.2f} {r['min_gap']:>8.3f} "
            f"{r['p01_gap']:>7.3f} {r['median_gap']:>8.3f} "
            f"{r['gaps_below_delay']:>5}/{r['gaps']}"
        )
    table = "\n".join(lines)
    print()
    print(table)
    results = {
        "command": " ".join([".venv/bin/python -m bench.politeness", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        "machine": facts,
        "table": table,
        "runs": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "politeness.json"
    path.write_text(json.dumps(results, indent=1), "utf-8")
    print(f"\nWrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
