"""Benchmark on real sites: the frontier vs plain Scrapy vs wget, on real HTML served
by nginx on loopback.

``python -m bench.realsites [--rounds 3] [--quick] [--corpus NAME=DIR ...]
[--crawlers frontier,frontier+pipelines,plain,wget]`` (``frontier+resources``, the
frontier with ``BFS_FOLLOW=resources``, and ``frontier+s3``, its pipelines with the
page store in a bucket of a SeaweedFS server started for the run, on demand; each
``frontier+s3`` crawl's objects are counted against its stored pages)

By default the corpora are three Debian documentation packages (Python, PostgreSQL,
SQLite; installed when missing, as root). One nginx serves each from its own address
(127.0.0.31, .32, ...; ``bench.nginxsites``). Every round crawls all the sites with
each crawler in turn, one process after another, the order rotated each round.
Everything fetched is read from nginx's access logs (the lines written during the
crawl): responses, the HTML pages (200, text/html) and what each crawl missed or
added against wget's pages of the same round. responses/s is responses over the
span from the first to the last response in the logs; CPU and peak RSS are the
crawl process's (``bench.procs.run_measured``). Prints a table of medians (min..max)
over rounds and writes ``bench/out/realsites.json`` (``realsites-quick.json``
with ``--quick``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench import accesslog, nginxsites, procs, realcrawls, realsummary, report, run
from bench.realcrawls import CRAWLERS, OPTIONAL, CrawlPlace
from crawler.crawlstate.embedded import EmbeddedRedis
from tests.objectstore import ObjectStoreServer

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import FrameType

OUT = run.OUT
LOG_SETTLE = 0.3  # s: nginx logs a response once it is sent; let the last one land
FRONTIER_CRAWLERS = (
    "frontier", "frontier+pipelines", "frontier+resources", "frontier+s3",
)  # fmt: skip
BUCKET = "bench-pages"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="one round of the first corpus"
    )
    parser.add_argument(
        "--corpus",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a folder of HTML to serve as a site (repeatable; replaces the defaults)",
    )
    parser.add_argument("--crawlers", default=",".join(CRAWLERS))
    parser.add_argument("--port", type=int, default=nginxsites.PORT)
    parser.add_argument("--timeout", type=float, default=600.0, help="s a crawl")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.crawlers = [name.strip() for name in args.crawlers.split(",") if name.strip()]
    if not args.crawlers or set(args.crawlers) - {*CRAWLERS, *OPTIONAL}:
        parser.error(f"--crawlers: choose among {', '.join((*CRAWLERS, *OPTIONAL))}")
    if args.quick:
        args.rounds = 1
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds must be in 1..20")
    try:
        args.corpora = corpora(args.corpus, quick=args.quick)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def corpora(given: Sequence[str], *, quick: bool) -> list[nginxsites.Corpus]:
    """``--corpus NAME=DIR`` values, else the defaults (the first only if *quick*)."""
    if not given:
        found = [
            nginxsites.Corpus(name, Path(folder))
            for name, folder, _ in nginxsites.DEFAULT_CORPORA
        ]
        return found[:1] if quick else found
    result = []
    for text in given:
        name, sep, folder = text.partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"--corpus wants NAME=DIR, got {text!r}")
        if not Path(folder).is_dir():
            raise ValueError(f"--corpus {name}: {folder} is not a folder")
        result.append(nginxsites.Corpus(name, Path(folder).resolve()))
    if len({corpus.name for corpus in result}) != len(result):
        raise ValueError("--corpus names must differ")
    return result


def ensure_installed(args: argparse.Namespace) -> bool:
    """Install what is missing as root; else say what to install. True when ready."""
    missing = nginxsites.missing_packages(args.corpora, defaults=not args.corpus)
    if not missing:
        return True
    if os.geteuid() != 0:
        print(f"Missing: as root, apt-get install -y {' '.join(missing)}")
        return False
    nginxsites.install(missing)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not ensure_installed(args):
        return 1
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    code = run.code_fingerprint()
    with lab(args) as bench:
        sites = bench.sites
        print("Sites: " + ", ".join(f"{s.corpus.name} {s.root_url}" for s in sites))
        facts = machine_facts(bench.client)
        runs: list[dict[str, Any]] = []
        for index in range(args.rounds):
            runs += crawl_round(bench, index)
    facts["crawler_code"] = code
    return finish(args, sites, runs, facts)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds: crawl, nginx and Redis are stopped


@dataclass(frozen=True)
class Bench:
    """What every crawl needs: the arguments, the sites and the private Redis."""

    args: argparse.Namespace
    sites: list[nginxsites.Site]
    server: EmbeddedRedis
    client: redis.Redis
    object_store: ObjectStoreServer | None


@contextlib.contextmanager
def lab(args: argparse.Namespace) -> Iterator[Bench]:
    """nginx serving the corpora and a private redis-server, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="realsites-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis", persist=False)
        (Path(tmp) / "redis").mkdir()
        server.start()
        client = redis.Redis.from_url(server.url)
        try:
            nginx_dir = Path(tmp) / "nginx"
            nginx_dir.mkdir()
            with (
                nginxsites.serving(args.corpora, nginx_dir, args.port) as sites,
                _object_store(args, Path(tmp) / "seaweedfs") as object_store,
            ):
                yield Bench(args, sites, server, client, object_store)
        finally:
            client.close()
            server.stop()


@contextlib.contextmanager
def _object_store(
    args: argparse.Namespace, directory: Path
) -> Iterator[ObjectStoreServer | None]:
    """A SeaweedFS server with the benchmark's bucket, when frontier+s3 runs."""
    if "frontier+s3" not in args.crawlers:
        yield None
        return
    server = ObjectStoreServer(directory)
    server.start()
    try:
        server.make_bucket(BUCKET)
        yield server
    finally:
        server.stop()


def crawl_round(bench: Bench, index: int) -> list[dict[str, Any]]:
    """Every crawler once, in this round's order; coverage against wget's pages."""
    crawlers = bench.args.crawlers
    shift = index % len(crawlers)
    order = crawlers[shift:] + crawlers[:shift]
    print(f"Round {index + 1}: {', '.join(order)}", flush=True)
    results = [crawl(bench, name, index) for name in order]
    reference = next((pages for r, pages in results if r["crawler"] == "wget"), None)
    runs = []
    for figures, pages in results:
        cover = None if reference is None else accesslog.coverage(pages, reference)
        runs.append(figures | realsummary.coverage_figures(cover))
        _print_coverage(runs[-1])
    return runs


def crawl(bench: Bench, name: str, index: int) -> tuple[dict[str, Any], frozenset[str]]:
    """One measured crawl of every site: its figures, and its set of HTML pages."""
    args, sites = bench.args, bench.sites
    tag = f"{name}-{index + 1}"
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=args.out))
    try:
        if name in FRONTIER_CRAWLERS:
            bench.client.flushall()
        roots = [site.root_url for site in sites]
        s3 = None
        if name == "frontier+s3" and bench.object_store is not None:
            s3 = bench.object_store.settings(BUCKET, tag)
        place = CrawlPlace(roots, workdir, bench.server.url, args.timeout, s3)
        offsets = nginxsites.log_sizes(sites)
        result = procs.run_measured(
            realcrawls.crawl_command(name, place),
            args.out / "realsites-logs" / f"{tag}.log",
            args.timeout,
        )
        time.sleep(LOG_SETTLE)
        fetched = accesslog.fetched(nginxsites.lines_since(sites, offsets))
        stats = run._read_stats(realcrawls.stats_file(workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    figures = {"crawler": name, "round": index + 1, "returncode": result.returncode}
    figures |= realsummary.run_figures(
        fetched, result.wall_seconds, result.cpu_seconds, result.peak_rss_bytes
    )
    figures["scrapy"] = _scrapy_figures(stats)
    if name == "frontier+s3" and bench.object_store is not None:
        objects = bench.object_store.objects(BUCKET, f"{tag}/")
        figures["objects"] = len(objects)
        figures["object_bytes"] = sum(map(len, objects.values()))
    # Others share the machine: the 1-minute load average says how much, roughly.
    figures["load_average"] = os.getloadavg()[0]
    figures["warnings"] = check(tag, figures, result)
    _print_run(tag, figures)
    return figures, fetched.html_pages


def _scrapy_figures(stats: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "finish_reason", "response_received_count", "item_scraped_count",
        "pagestore/saved", "pagestore/retries",
    )  # fmt: skip
    return {key: stats.get(key) for key in keys}


def check(tag: str, figures: dict[str, Any], result: procs.ProcessResult) -> list[str]:
    """What went wrong with a crawl, one line each (wget's 8 is a 404 it met)."""
    warnings = []
    if result.timed_out:
        warnings.append(f"{tag}: killed at the timeout")
    allowed = (0, 8) if tag.startswith("wget") else (0,)
    if result.returncode not in allowed:
        warnings.append(f"{tag}: exit status {result.returncode}")
    reason = figures["scrapy"]["finish_reason"]
    if not tag.startswith("wget") and reason != "finished":
        warnings.append(f"{tag}: finish_reason {reason!r}")
    if not figures["responses"]:
        warnings.append(f"{tag}: no response in the access logs")
    saved = figures["scrapy"].get("pagestore/saved")
    if "objects" in figures and figures["objects"] != saved:
        warnings.append(f"{tag}: {figures['objects']} objects, {saved} pages stored")
    return warnings


def _print_run(tag: str, f: dict[str, Any]) -> None:
    rate = f["pages_per_second"] or 0.0
    print(f"  {tag}: {f['responses']} responses ({f['html_pages']} HTML pages, "
          f"{f['non_html']} other) in {f['seconds']:.1f} s = {rate:.1f}/s, "
          f"CPU {f['cpu_ms_per_response'] or 0:.2f} ms/response, "
          f"peak RSS {f['peak_rss_mb']:.0f} MB, load {f['load_average']:.1f}",
          flush=True)  # fmt: skip


def _print_coverage(f: dict[str, Any]) -> None:
    if f["missing"] is None or f["crawler"] == "wget":
        return
    line = f"  {f['crawler']} vs wget: {f['missing']} missing, {f['extra']} extra"
    if f["first_missing"]:
        line += "; first missing: " + ", ".join(f["first_missing"])
    print(line, flush=True)


def machine_facts(client: redis.Redis) -> dict[str, Any]:
    """``bench.run``'s facts, plus the nginx and wget versions."""
    facts = run.machine_facts(client)
    facts["nginx"] = nginxsites.nginx_version()
    wget = subprocess.run(
        ["wget", "--version"], capture_output=True, text=True, check=False
    )
    facts["wget"] = wget.stdout.splitlines()[0] if wget.stdout else None
    return facts


def finish(
    args: argparse.Namespace,
    sites: list[nginxsites.Site],
    runs: list[dict[str, Any]],
    facts: dict[str, Any],
) -> int:
    rows = realsummary.summarize(runs)
    text = realsummary.summary_table(rows)
    warnings = [warning for r in runs for warning in r["warnings"]]
    print(f"\nMedian (min..max) over {args.rounds} round(s); responses/s from the "
          "first to the last response in the access logs:\n")  # fmt: skip
    print(text)
    for warning in warnings:
        print(f"WARNING: {warning}")
    results = {
        "command": " ".join(["python -m bench.realsites", *sys.argv[1:]]),
        "sites": [
            {
                "name": s.corpus.name,
                "root": str(s.corpus.root),
                "url": s.root_url,
                "gzip": s.gzip,
            }
            for s in sites
        ],
        "machine": facts,
        "table": text,
        "summary": realsummary.as_json(rows),
        "runs": runs,
        "warnings": warnings,
    }
    # A --quick trial never overwrites the figures of a full run.
    path = args.out / ("realsites-quick.json" if args.quick else "realsites.json")
    report.write_json(path, results)
    print(f"\nWrote {path}")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
