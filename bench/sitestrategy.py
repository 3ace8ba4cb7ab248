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

from bench import nginxsites, procs, report, run, sitecorpora
from bench.crawls import CrawlSpec, command
from bench.realcrawls import stats_file
from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.sitecounters import evidence_of
from crawler.policy.siteclass import classify
from crawler.records.database import RecordsDatabase
from crawler.records.sites import SiteTable

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

OUT = run.OUT
KEYS = CrawlKeys("bfs")
# What each label expects auto to make of a host.
EXPECTED = {"portal": "bfs", "specialised": "dfs"}
NEXT_CRAWL = "the next crawl"


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
            "PAGESTORE_DIR": "",
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


def observed(client: redis.Redis, sites: list[Labelled]) -> dict[str, dict[str, Any]]:
    """Each site's evidence and strategy as the crawl last wrote them in Redis."""
    found = {}
    for s in sites:
        fields = client.hgetall(KEYS.site(s.host))
        evidence = evidence_of(fields)  # type: ignore[arg-type]
        observation = evidence.observation()
        strategy = fields.get(b"strategy", b"").decode()  # type: ignore[union-attr]
        found[s.name] = {
            "pages": observation.pages,
            "links": observation.links,
            "leaving": observation.leaving,
            "share": round(observation.share, 4),
            "depth": observation.depth,
            "strategy": strategy,
            "correct": strategy.startswith(EXPECTED[s.label]),
        }
    return found


def from_history(database: Path, sites: list[Labelled]) -> dict[str, dict[str, Any]]:
    """What the next crawl starts from for each site: the records' history alone."""
    records = RecordsDatabase(f"sqlite:///{database}").open(create=False)
    try:
        rows = SiteTable(records).read()
    finally:
        records.close()
    found = {}
    for s in sites:
        row = rows.get(s.host)
        history = row.history_before(NEXT_CRAWL) if row is not None else None
        found[s.name] = (
            {"strategy": None, "correct": False}
            if history is None
            else {
                "crawls": history.crawls,
                "share": history.share,
                "depth": history.depth,
                "strategy": (c := classify(history)).strategy + f" ({c.why})",
                "correct": classify(history).strategy == EXPECTED[s.label],
            }
        )
    return found


def score(found: dict[str, dict[str, Any]]) -> str:
    right = sum(1 for entry in found.values() if entry["correct"])
    return f"{right}/{len(found)}"


def table(sites: list[Labelled], crawls: list[dict[str, Any]]) -> str:
    """One line a site: its label, what each crawl saw and made of it."""
    head = ["site", "label", "pages", "links leave", "depth"]
    for c in crawls:
        head += [f"crawl {c['crawl']}", f"history after {c['crawl']}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sites:
        last = crawls[-1]["hosts"][s.name]
        row = [
            s.name,
            s.label,
            str(last["pages"]),
            f"{last['share']:.1%}",
            str(last["depth"]),
        ]
        for c in crawls:
            row += [
                c["hosts"][s.name]["strategy"],
                c["history"][s.name]["strategy"] or "-",
            ]
        lines.append("| " + " | ".join(row) + " |")
    scores = ["**score**", "", "", "", ""]
    for c in crawls:
        scores += [f"**{score(c['hosts'])}**", f"**{score(c['history'])}**"]
    lines.append("| " + " | ".join(scores) + " |")
    return "\n".join(lines)


def _rates(figures: dict[str, Any]) -> str:
    rate = figures["pages_per_second"] or 0.0
    cpu = figures["cpu_ms_per_response"] or 0.0
    return (
        f"{figures['responses']} responses in {figures['seconds'] or 0:.1f} s, "
        f"{rate:.1f} responses/s, {cpu:.2f} CPU ms a response"
    )


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
                figures["hosts"] = observed(client, sites)
                figures["history"] = from_history(Path(work) / "pages.db", sites)
                crawls.append(figures)
                print(
                    f"Crawl {n}: {figures['responses']} responses in "
                    f"{figures['seconds'] or 0:.1f} s; score {score(figures['hosts'])}, "
                    f"next crawl starts from {score(figures['history'])}",
                    flush=True,
                )
            if args.control:
                control = crawl(place, 0, history=False)
                print(f"Control: {_rates(control)}", flush=True)
        finally:
            client.close()
    text = table(sites, crawls)
    text += "\n\n" + "\n".join(f"Crawl {c['crawl']}: {_rates(c)}" for c in crawls)
    if control is not None:
        text += f"\nWithout site histories: {_rates(control)}"
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
