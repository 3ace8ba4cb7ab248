"""The local seen cache (issue 27): bytes a URL, and a crawl larger than the cache.

``python -m bench.seencache [--before REV] [--keys 1000000] [--hosts 50 --pages 400]``

1. **Bytes a URL.** *keys* URLs (a path a host over 1000 hosts) go into the cache
   as a crawl puts them there: before, the spider's dict of URLs and the scheduler's
   dict of fingerprints (the code at *before*, read with ``git show``); now the one
   shared cache (``crawler/context/seencache.py``), sized to hold them. Bytes are
   ``tracemalloc``'s for the dicts and their keys, and the tables' mapped size
   for the new cache (its slots, all written); time is a lookup's.
2. **A crawl ten times larger than the cache.** One ``scrapy crawl bfs`` node
   crawls the test site (*hosts* x *pages*, 20 links a page, 20% to other hosts)
   with the code at *before* (a ``git archive`` in a temporary directory) and a
   cache of ``--entries`` (a tenth of the pages), then with this checkout's code
   and the same memory (``--entries`` x the bytes an entry measured in part 1).
   Reported: pages/s, crawler CPU and peak RSS, links that reached the frontier's
   seen check in Redis (``frontier/duplicates``) a page, Redis round trips a page.

Writes ``bench/out/seencache.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import procs, redisprobe
from bench.crawls import BENCH, ROOT, CrawlSpec, command
from bench.run import code_fingerprint, machine_facts
from crawler.context.seencache import SLOT_BYTES, SeenCache

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import ModuleType

OUT = BENCH / "out"
OLD_MODULE = "crawler/frontier/seencache.py"
LOOKUPS = 200_000


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default="6812222", help="the code before")
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--pages", type=int, default=400, help="pages a host")
    parser.add_argument(
        "--entries", type=int, default=0, help="the old cache's size (a tenth)"
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--skip-crawls", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    entries = args.entries or args.hosts * args.pages // 10
    old = _old_module(args.before)
    urls = [f"http://h{i % 1000}.example/docs/page-{i}.html" for i in range(args.keys)]
    structures = [_old_bytes(old, urls), _new_bytes(urls)]
    for row in structures:
        print(f"{row['code']:>7}: {row['bytes_per_url']:.1f} B a URL, lookup "
              f"{row['lookup_us']:.2f} us", flush=True)  # fmt: skip
    crawls: list[dict[str, Any]] = []
    if not args.skip_crawls:
        per_entry = structures[0]["bytes_per_url"]
        megabytes = round(entries * per_entry / 2**20, 2)
        shape = procs.SiteShape(args.hosts, args.pages, 20, 0.2)
        with procs.lab(ROOT, shape) as lab, _tree(args.before) as before_tree:
            for code, tree, setting in (
                ("before", before_tree, {"FRONTIER_LOCAL_SEEN_CACHE": entries}),
                ("after", ROOT, {"FRONTIER_LOCAL_SEEN_MB": megabytes}),
            ):
                crawls.append(_crawl(args, lab, code, tree, setting))
            facts = machine_facts(lab.client)
    else:
        facts = {}
    facts["crawler_code"] = code_fingerprint()
    out = OUT / "seencache.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"structures": structures, "crawls": crawls, "machine": facts}
    out.write_text(json.dumps(report, indent=1), "utf-8")
    print(f"Wrote {out}")
    return 0


def _old_module(revision: str) -> ModuleType:
    """The cache module as it was at *revision*."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{OLD_MODULE}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("old_seencache", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, OLD_MODULE, "exec"), module.__dict__)  # noqa: S102 (our own past code)
    return module


def _old_bytes(old: ModuleType, urls: list[str]) -> dict[str, Any]:
    """The spider's URL cache and the scheduler's fingerprint cache, as before."""
    fingerprints = [hashlib.sha1(url.encode()).digest() for url in urls]  # noqa: S324
    gc.collect()
    tracemalloc.start()
    spider, scheduler = old.SeenCache(len(urls)), old.SeenCache(len(urls))
    for url, fingerprint in zip(urls, fingerprints, strict=True):
        # Keys of their own, as a parsed link and a computed fingerprint are.
        spider.add((url + " ")[:-1], 3)
        scheduler.add(bytes(bytearray(fingerprint)), 3)
    used, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "code": "before",
        "bytes_per_url": used / len(urls),
        "lookup_us": _lookup_us(spider, urls),
    }


def _new_bytes(urls: list[str]) -> dict[str, Any]:
    cache = SeenCache(len(urls))
    for url in urls:
        cache.add(url, 3)
    kept = len(cache)
    return {
        "code": "after",
        "bytes_per_url": cache.capacity * SLOT_BYTES / len(urls),
        "kept": kept,
        "lookup_us": _lookup_us(cache, urls),
    }


def _lookup_us(cache: Any, urls: list[str]) -> float:
    sample = urls[:: max(1, len(urls) // LOOKUPS)]
    started = time.perf_counter()
    for url in sample:
        cache.depth_of(url)
    return (time.perf_counter() - started) / len(sample) * 1e6


@contextlib.contextmanager
def _tree(revision: str) -> Iterator[Path]:
    """The project at *revision*, unpacked in a temporary directory."""
    archive = subprocess.run(
        ["git", "archive", revision], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory(prefix="bench-seencache-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp)


def _crawl(
    args: argparse.Namespace,
    lab: procs.Lab,
    code: str,
    tree: Path,
    setting: dict[str, Any],
) -> dict[str, Any]:
    lab.client.flushall()
    stats_file = OUT / "stats" / f"seencache-{code}.json"
    stats_file.unlink(missing_ok=True)
    total = args.hosts * args.pages
    spec = CrawlSpec(
        lab.site.seeds[0], lab.server.url, total, args.timeout, stats_file,
        extra={**setting, "BFS_SCOPE": "seed-hosts"},
    )  # fmt: skip
    cmd = command("frontier", spec)
    seeds = ",".join(lab.site.seeds)
    argv = [a if not a.startswith("seeds=") else f"seeds={seeds}" for a in cmd.argv]
    print(f"Crawl {code} ({setting}) ...", flush=True)
    before = redisprobe.activity(lab.client)
    redis_cpu = procs.cpu_seconds(lab.server.pid)
    result = procs.run_measured(
        type(cmd)(argv, tree, cmd.env), OUT / "logs" / f"seencache-{code}.log",
        args.timeout,
    )  # fmt: skip
    activity = redisprobe.activity(lab.client) - before
    stats = json.loads(stats_file.read_text("utf-8"))
    pages = int(stats.get("response_received_count", 0))
    seconds = result.wall_seconds
    row = {
        "code": code,
        "setting": setting,
        "pages": pages,
        "seconds": seconds,
        "pages_per_second": pages / seconds,
        "crawler_cpu_seconds": result.cpu_seconds,
        "crawler_cpu_ms_per_page": result.cpu_seconds / pages * 1000,
        "peak_rss_mb": result.peak_rss_bytes / 2**20,
        "redis_cpu_ms_per_page": (procs.cpu_seconds(lab.server.pid) - redis_cpu)
        / pages
        * 1000,
        "redis_duplicates_per_page": stats.get("frontier/duplicates", 0) / pages,
        "redis_round_trips_per_page": activity.reads / pages,
        "returncode": result.returncode,
    }
    print(f"  {pages} pages in {seconds:.1f} s ({row['pages_per_second']:.0f}/s), "
          f"{row['redis_duplicates_per_page']:.2f} duplicates a page to Redis, "
          f"{row['redis_round_trips_per_page']:.2f} round trips a page, CPU "
          f"{row['crawler_cpu_ms_per_page']:.2f} ms a page (Redis "
          f"{row['redis_cpu_ms_per_page']:.2f}), peak RSS {row['peak_rss_mb']:.0f} MB",
          flush=True)  # fmt: skip
    return row


if __name__ == "__main__":
    sys.exit(main())
