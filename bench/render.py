"""Benchmark: rendering (issue 14) on the local site's pages for a browser.

``python -m bench.render [--hosts 20] [--pages 20] [--delay 1.0] [--render-pages 8]``

Two parts, each crawl its own ``scrapy crawl bfs`` process on a private redis-server
and ``tests.site`` (pages made for a browser: tests/dynamicsite.py), confined to the
seeds' hosts:

1. **Rendering throughput and memory.** ``RENDER_MODE=always`` on 4 hosts (links
   written by a script, by a lazy-load function, on scroll, and static), no
   politeness delay, at ``RENDER_CONCURRENCY`` 1 and 4. Rendered pages a
   second are the site's render marks (a page's script asks for one) over the span
   from the first page fetch to the last mark. Memory is the browser's: every 0.5 s
   the crawl's descendant processes whose name starts with ``chrom`` or
   ``headless`` are summed, RSS (over-counts the pages the browser's processes
   share) and PSS (each shared page split among its sharers: what the browser
   really costs), and the peak kept; ``per page open`` is the PSS the three
   extra pages at once of concurrency 4 add, over concurrency 1's.
2. **auto where 10% of hosts need rendering.** ``--hosts`` hosts x ``--pages``
   pages, politeness ``--delay`` seconds (day and night, no jitter), one host in
   ten with script-written links and the rest static; crawled with
   ``RENDER_MODE=never`` (static only: it misses the dynamic hosts' pages) and
   ``auto``. Crawl time is the crawl process's wall time (start to exit: the
   browser's start included); the target is auto / never <= 1.3. Pages found are
   distinct pages the site served 200; renders are render marks at the site. Where
   the time went: for the dynamic hosts and for the static ones, the mean seconds
   between two page fetches of a host (the delay, plus the fetch or render: the
   frontier starts a host's delay when its fetch ends) and when the group's last
   page was fetched.

Prints a table and writes ``bench/out/render.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import redis

from bench import procs
from bench.crawls import BENCH, ROOT, CrawlSpec, command
from bench.run import code_fingerprint, machine_facts_standalone
from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.render.config import find_browser
from tests.dynamicsite import is_subresource_path, rendered_page
from tests.site import page_index, read_log

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

OUT = BENCH / "out"
TARGET = 1.3
MEMORY_INTERVAL = 0.5
BROWSER_NAMES = ("chrom", "headless")
# Part 1's site: one host of each kind of page for a browser.
THROUGHPUT_KINDS = ("script", "lazy:loadMore", "scroll", "static")
ACTIONS = '["scroll", "loadMore"]'


@dataclass(frozen=True)
class Memory:
    """Peak memory of a crawl's browser, summed over its processes."""

    rss: int = 0
    pss: int = 0
    processes: int = 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=20, help="part 2's hosts")
    parser.add_argument("--pages", type=int, default=20, help="part 2's pages a host")
    parser.add_argument("--links", type=int, default=4)
    parser.add_argument("--delay", type=float, default=1.0, help="part 2's politeness")
    parser.add_argument(
        "--render-pages", type=int, default=8, help="part 1's pages a host (4 hosts)"
    )
    parser.add_argument("--only", default="throughput,auto", help="parts to run")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for every crawl (as scrapy's -s), e.g. RENDER_SETTLE=0.3",
    )
    args = parser.parse_args(argv)
    args.only = {part.strip() for part in args.only.split(",") if part.strip()}
    if args.only - {"throughput", "auto"} or args.hosts < 10 or args.delay < 0:
        parser.error("need --only among throughput,auto, --hosts >= 10, --delay >= 0")
    return args


@contextlib.contextmanager
def lab(shape: procs.SiteShape, behave: Sequence[str]) -> Iterator[procs.Lab]:
    """A private redis-server and the site with *behave* (``--behave`` values) and a
    request log, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        log = Path(tmp) / "requests.jsonl"
        extra = [arg for item in behave for arg in ("--behave", item)]
        try:
            with procs.running_site(ROOT, shape, log, extra) as site:
                yield procs.Lab(server, client, site, log)
        finally:
            client.close()
            server.stop()


def crawl(
    lab: procs.Lab,
    label: str,
    settings: dict[str, Any],
    args: argparse.Namespace,
    dynamic: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """One crawl of the site's hosts: its process and browser measured, and what the
    site saw of it (*dynamic*: the hosts whose links need a browser, as
    ``address:port``)."""
    lab.client.flushall()
    assert lab.log is not None
    seen = len(read_log(lab.log)) if lab.log.exists() else 0
    spec = CrawlSpec(
        ",".join(lab.site.seeds),
        lab.server.url,
        10_000,
        args.timeout,
        args.out / "stats" / f"render-{label}.json",
        extra={
            "BFS_SCOPE": "seed-hosts",
            "FRONTIER_HOST_CONCURRENCY": 1,
            "RENDER_ACTION": ACTIONS,
            **settings,
            **dict(item.split("=", 1) for item in args.set),
        },
    )
    print(f"Crawl {label} ...", flush=True)
    wall, returncode, memory = run_watched(
        command("frontier", spec), args.out / "logs" / f"render-{label}.log", args
    )
    row = {"crawl": label, "exit": returncode, "wall_seconds": wall}
    row |= {"browser_rss": memory.rss, "browser_pss": memory.pss}
    row |= {"browser_processes": memory.processes}
    rows = read_log(lab.log)[seen:]
    row |= site_view(rows)
    if dynamic:
        row |= host_paces(rows, dynamic)
    print(
        f"  {row['pages']} pages, {row['renders']} renders in {wall:.1f} s; "
        f"browser peak PSS {memory.pss / 2**20:.0f} MiB",
        flush=True,
    )
    return row


def run_watched(
    crawl_command: Any, log_path: Path, args: argparse.Namespace
) -> tuple[float, int | None, Memory]:
    """Run the crawl to its end (bounded), sampling its browser's memory."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            crawl_command.argv,
            cwd=crawl_command.cwd,
            env=crawl_command.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            peak = watch_browser(process, started + args.timeout)
        finally:
            procs.stop(process)
    return time.monotonic() - started, process.returncode, peak


def watch_browser(process: subprocess.Popen[bytes], deadline: float) -> Memory:
    """Peak browser memory of *process*'s descendants until it exits or *deadline*."""
    peak = Memory()
    crawler = psutil.Process(process.pid)
    while process.poll() is None and time.monotonic() < deadline:
        now = browser_memory(crawler)
        peak = Memory(
            max(peak.rss, now.rss),
            max(peak.pss, now.pss),
            max(peak.processes, now.processes),
        )
        time.sleep(MEMORY_INTERVAL)
    return peak


def browser_memory(crawler: psutil.Process) -> Memory:
    """RSS and PSS summed over the browser's processes (descendants of *crawler*)."""
    rss = pss = count = 0
    with contextlib.suppress(psutil.Error):
        for child in crawler.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if not child.name().lower().startswith(BROWSER_NAMES):
                    continue
                info = child.memory_full_info()
                rss += info.rss
                pss += getattr(info, "pss", info.rss)
                count += 1
    return Memory(rss, pss, count)


def site_view(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pages served, renders and rendered pages a second, from the site's log."""
    pages = [
        r
        for r in rows
        if r["path"] != "/robots.txt" and not is_subresource_path(r["path"])
    ]
    found = {
        (r["host"], r["path"])
        for r in pages
        if r["status"] == 200 and page_index(r["path"], 1 << 30) is not None
    }
    marks = [r for r in rows if rendered_page(r["path"]) is not None]
    span = marks[-1]["t"] - pages[0]["t"] if marks and pages else 0.0
    hosts_rendered = {r["host"] for r in marks}
    return {
        "pages": len(found),
        "fetches": len(pages),
        "renders": len(marks),
        "hosts_rendered": len(hosts_rendered),
        "renders_per_second": len(marks) / span if span > 0 else 0.0,
    }


def host_paces(rows: list[dict[str, Any]], dynamic: frozenset[str]) -> dict[str, Any]:
    """Where a crawl's time went, for the *dynamic* hosts and for the others: the
    mean seconds between two page fetches of a host, and when the last page of the
    group was fetched (seconds from the crawl's first page fetch)."""
    pages = [r for r in rows if page_index(r["path"], 1 << 30) is not None]
    if not pages:
        return {}
    start = pages[0]["t"]
    times: dict[str, list[float]] = {}
    for row in pages:
        times.setdefault(row["host"], []).append(row["t"])
    paces: dict[str, Any] = {}
    for group in ("dynamic", "static"):
        hosts = [h for h in times if (h in dynamic) == (group == "dynamic")]
        gaps = [
            (times[h][-1] - times[h][0]) / (len(times[h]) - 1)
            for h in hosts
            if len(times[h]) > 1
        ]
        paces[f"{group}_seconds_a_page"] = sum(gaps) / len(gaps) if gaps else 0.0
        paces[f"{group}_done_at"] = max(
            (times[h][-1] - start for h in hosts), default=0.0
        )
    return paces


def throughput(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Part 1: RENDER_MODE=always, no delay, at RENDER_CONCURRENCY 1 and 4."""
    shape = procs.SiteShape(len(THROUGHPUT_KINDS), args.render_pages, args.links, 0.0)
    behave = [f"{i}={kind}" for i, kind in enumerate(THROUGHPUT_KINDS)]
    rows = []
    with lab(shape, behave) as running:
        for concurrency in (1, 4):
            settings = {
                "RENDER_MODE": "always",
                "RENDER_CONCURRENCY": concurrency,
                "FRONTIER_HOST_CONCURRENCY": 4,
            }
            rows.append(crawl(running, f"always-c{concurrency}", settings, args))
    return rows


def adaptive(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Part 2: never vs auto on a site where one host in ten needs rendering."""
    shape = procs.SiteShape(args.hosts, args.pages, args.links, 0.0)
    behave = [f"{i}={'script' if i % 10 == 0 else 'static'}" for i in range(args.hosts)]
    polite = {
        "POLITENESS_DAY_DELAY": args.delay,
        "POLITENESS_NIGHT_DELAY": args.delay,
        "POLITENESS_JITTER": 0,
    }
    with lab(shape, behave) as running:
        port = running.site.port
        dynamic = frozenset(f"127.0.0.{2 + i}:{port}" for i in range(0, args.hosts, 10))
        return [
            crawl(running, mode, {"RENDER_MODE": mode, **polite}, args, dynamic)
            for mode in ("never", "auto")
        ]


def table(rows: list[dict[str, Any]]) -> str:
    header = (
        f"{'crawl':<12} {'pages':>6} {'renders':>8} {'wall s':>7} {'renders/s':>10} "
        f"{'browser RSS MiB':>16} {'PSS MiB':>8} {'procs':>6}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['crawl']:<12} {r['pages']:>6} {r['renders']:>8} "
            f"{r['wall_seconds']:>7.1f} {r['renders_per_second']:>10.2f} "
            f"{r['browser_rss'] / 2**20:>16.0f} {r['browser_pss'] / 2**20:>8.0f} "
            f"{r['browser_processes']:>6}"
        )
    return "\n".join(lines)


def summary(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The figures the issue names, from the crawls that ran."""
    lines = []
    one, four = rows.get("always-c1"), rows.get("always-c4")
    if one and four:
        extra = (four["browser_pss"] - one["browser_pss"]) / 3 / 2**20
        lines.append(
            f"rendered pages/s: {one['renders_per_second']:.2f} (1 page at once), "
            f"{four['renders_per_second']:.2f} (4); browser peak PSS "
            f"{one['browser_pss'] / 2**20:.0f} MiB with 1 page open, "
            f"+{extra:.0f} MiB a page open beyond it"
        )
    never, auto = rows.get("never"), rows.get("auto")
    if never and auto:
        ratio = auto["wall_seconds"] / never["wall_seconds"]
        verdict = "meets" if ratio <= TARGET else "misses"
        lines.append(
            f"auto / never crawl time: {ratio:.2f} ({verdict} the {TARGET} target); "
            f"pages found: never {never['pages']}, auto {auto['pages']}"
        )
        lines += [
            f"{row['crawl']}: a page every {row['static_seconds_a_page']:.2f} s on "
            f"a static host (last at {row['static_done_at']:.1f} s), every "
            f"{row['dynamic_seconds_a_page']:.2f} s on a dynamic one (last at "
            f"{row['dynamic_done_at']:.1f} s)"
            for row in (never, auto)
            if "static_done_at" in row
        ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_fingerprint()
    rows: list[dict[str, Any]] = []
    if "throughput" in args.only:
        rows += throughput(args)
    if "auto" in args.only:
        rows += adaptive(args)
    facts = machine_facts_standalone() | {
        "crawler_code": code,
        "browser": browser_version(),
    }
    text = table(rows)
    lines = summary({r["crawl"]: r for r in rows})
    print(f"\n{text}\n")
    print("\n".join(lines))
    results = {
        "command": " ".join([".venv/bin/python -m bench.render", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, (Path, set)) else v
            for k, v in vars(args).items()
        },
        "machine": facts,
        "table": text,
        "summary": lines,
        "runs": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "render.json"
    path.write_text(json.dumps(results, indent=1), "utf-8")
    print(f"\nWrote {path}")
    return 0


def browser_version() -> str:
    """The version Chromium reports (``chromium --version``), or why not."""
    browser = find_browser("")
    if browser is None:
        return "no browser found"
    result = subprocess.run(
        [browser, "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    return result.stdout.strip() or result.stderr.strip()[:200]


if __name__ == "__main__":
    sys.exit(main())
