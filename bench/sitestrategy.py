"""The hand-labelled check of ``FRONTIER_SITE_STRATEGY = auto``: portals and
specialised sites on loopback, crawled, classified, scored.

``python -m bench.sitestrategy [--crawls 2] [--control] [--timeout 900] [--port P]``

The set: the three real documentation corpora of ``bench.realsites`` (Debian's
python3.11-doc, postgresql-doc-15, sqlite3-doc; labelled specialised) and the
synthetic sites of ``bench.sitecorpora`` (4 portals and 2 deep archives labelled
portal, 3 manuals labelled specialised), one nginx serving each from its own
address. Each crawl is the project's ``bfs`` spider from every site's home page,
confined to the sites' hosts, with ``*=auto``, no politeness delay, the records
database kept from one crawl to the next (the history) and the frontier started
over each time (``FRONTIER_RESET``: a new crawl). After each crawl every host's
strategy as the crawl last wrote it (``<prefix>:site:<host>``) is scored against
its label (portal: bfs, specialised: dfs), and so is the strategy the next crawl
would start from (the records' history alone). ``--control`` adds one crawl of
the same sites with the site history middleware off (what counting costs: CPU ms
a response, pages/s). Prints a table, writes ``bench/out/sitestrategy.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench import nginxsites, procs, report, run, sitecorpora, sitescores
from bench.crawls import CrawlSpec, command
from bench.realcrawls import stats_file
from crawler.crawlstate.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

OUT = run.OUT


@dataclass(frozen=True, slots=True)
class Labelled:
    """A site of the set: its name, hand label, and where it is served."""

    name: str
    label: str
    site: nginxsites.Site

    @property
    def host(self) -> str:
        return self.site.host


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--crawls", type=int, default=2, help="crawls in a row (1-5)")
    parser.add_argument(
        "--control", action="store_true", help="and a crawl without site histories"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="s a crawl")
    parser.add_argument("--port", type=int, default=nginxsites.PORT + 7)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not 1 <= args.crawls <= 5:
        parser.error("--crawls must be in 1..5")
    return args


def plan(tmp: Path, port: int) -> tuple[list[nginxsites.Corpus], list[str]]:
    """The corpora in serving order (real first) and each one's label; the
    synthetic ones written under *tmp*, their links naming every site's origin."""
    real = [
        nginxsites.Corpus(name, Path(folder))
        for name, folder, _ in nginxsites.DEFAULT_CORPORA
    ]
    synthetic = [nginxsites.Corpus(s.name, tmp / s.name) for s in sitecorpora.SYNTHETIC]
    corpora = real + synthetic
    origins = [
        f"http://127.0.0.{nginxsites.FIRST_ADDRESS + i}:{port}"
        for i in range(len(corpora))
    ]
    portals = [
        url
        for s, origin in zip(sitecorpora.SYNTHETIC, origins[len(real) :], strict=True)
        if s.label == "portal"
        for url in sitecorpora.portal_pages(origin)
    ]
    elsewhere = sitecorpora.Elsewhere([o + "/" for o in origins], portals)
    for s, origin in zip(sitecorpora.SYNTHETIC, origins[len(real) :], strict=True):
        sitecorpora.write_site(s, tmp / s.name, origin, elsewhere)
    labels = ["specialised"] * len(real) + [s.label for s in sitecorpora.SYNTHETIC]
    return corpora, labels


@contextlib.contextmanager
def lab(args: argparse.Namespace) -> Iterator[tuple[list[Labelled], EmbeddedRedis]]:
    """nginx serving the set and a private redis-server, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="sitestrategy-") as name:
        tmp = Path(name)
        tmp.chmod(0o755)  # the nginx worker may run as nobody: it must enter
        corpora, labels = plan(tmp / "sites", args.port)
        server = EmbeddedRedis(tmp / "redis", persist=False)
        (tmp / "redis").mkdir()
        server.start()
        try:
            (tmp / "nginx").mkdir()
            with nginxsites.serving(corpora, tmp / "nginx", args.port) as sites:
                yield (
                    [
                        Labelled(s.corpus.name, label, s)
                        for s, label in zip(sites, labels, strict=True)
                    ],
                    server,
                )
        finally:
            server.stop()


MIDDLEWARE = "crawler.spiders.sitehistory.SiteHistoryMiddleware"


@dataclass(frozen=True, slots=True)
class Place:
    """Where the crawls run: the arguments, the sites, the Redis, a directory."""

    args: argparse.Namespace
    sites: list[Labelled]
    redis_url: str
    workdir: Path


def crawl(place: Place, n: int, *, history: bool = True) -> dict[str, Any]:
    """Crawl *n*: every site from its home page (without the site history
    middleware unless *history*); its figures."""
    args, sites, redis_url, workdir = (
        place.args,
        place.sites,
        place.redis_url,
        place.workdir,
    )
    spec = CrawlSpec(
        seed=",".join(s.site.root_url for s in sites),
        redis_url=redis_url,
        total_pages=100_000,
        timeout=args.timeout,
        stats_file=stats_file(workdir / f"crawl-{n}"),
        extra={
            "FRONTIER_SITE_STRATEGY": "*=auto",
            "RECORDS_DATABASE_URL": f"sqlite:///{workdir / 'pages.db'}",
            "PAGESTORE_URL": "",
            "ROBOTSTXT_OBEY": True,
            **({} if history else {"SPIDER_MIDDLEWARES": {MIDDLEWARE: None}}),
        },
    )
    crawl_command = command("frontier", spec)
    env = {
        k: v for k, v in crawl_command.env.items() if not k.lower().endswith("_proxy")
    }
    argv = [*crawl_command.argv, "-a", "scope=seed-hosts"]
    result = procs.run_measured(
        type(crawl_command)(argv, crawl_command.cwd, env),
        args.out / "sitestrategy-logs" / f"crawl-{n}.log",
        args.timeout,
    )
    stats = run._read_stats(stats_file(workdir / f"crawl-{n}"))
    first, last = (
        stats.get("bench/first_response_time"),
        stats.get("bench/last_response_time"),
    )
    pages = stats.get("response_received_count", 0)
    seconds = (last - first) if first and last else None
    return {
        "crawl": n,
        "returncode": result.returncode,
        "finish_reason": stats.get("finish_reason"),
        "responses": pages,
        "seconds": seconds,
        "pages_per_second": pages / seconds if seconds else None,
        "cpu_ms_per_response": 1000 * result.cpu_seconds / pages if pages else None,
        "history": history,
        "classified_dfs": stats.get("sites/classified_dfs", 0),
        "classified_bfs": stats.get("sites/classified_bfs", 0),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpora = [nginxsites.Corpus(n, Path(f)) for n, f, _ in nginxsites.DEFAULT_CORPORA]
    missing = nginxsites.missing_packages(corpora, defaults=True)
    if missing:
        print(f"Missing: as root, apt-get install -y {' '.join(missing)}")
        return 1
    crawls: list[dict[str, Any]] = []
    control: dict[str, Any] | None = None
    with lab(args) as (sites, server), tempfile.TemporaryDirectory() as work:
        print(
            "Sites: "
            + ", ".join(f"{s.name} ({s.label}) {s.site.root_url}" for s in sites)
        )
        client = redis.Redis.from_url(server.url)
        try:
            facts = run.machine_facts(client)
            place = Place(args, sites, server.url, Path(work))
            for n in range(1, args.crawls + 1):
                figures = crawl(place, n)
                figures["hosts"] = sitescores.observed(client, sites)
                figures["history"] = sitescores.from_history(
                    Path(work) / "pages.db", sites
                )
                crawls.append(figures)
                print(
                    f"Crawl {n}: {figures['responses']} responses in "
                    f"{figures['seconds'] or 0:.1f} s; score {sitescores.score(figures['hosts'])}, "
                    f"next crawl starts from {sitescores.score(figures['history'])}",
                    flush=True,
                )
            if args.control:
                control = crawl(place, 0, history=False)
                print(f"Control: {sitescores.rates(control)}", flush=True)
        finally:
            client.close()
    text = sitescores.table(sites, crawls)
    text += "\n\n" + "\n".join(
        f"Crawl {c['crawl']}: {sitescores.rates(c)}" for c in crawls
    )
    if control is not None:
        text += f"\nWithout site histories: {sitescores.rates(control)}"
    print("\n" + text)
    results = {
        "command": " ".join(["python -m bench.sitestrategy", *sys.argv[1:]]),
        "machine": facts | {"crawler_code": run.code_fingerprint()},
        "sites": [
            {"name": s.name, "label": s.label, "url": s.site.root_url} for s in sites
        ],
        "crawls": crawls,
        "control": control,
        "table": text,
    }
    path = args.out / "sitestrategy.json"
    report.write_json(path, results)
    print(f"\nWrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
