"""The crawls of the real-sites benchmark: their command lines.

The Scrapy crawls are ``bench.crawls.command``'s (``COMMON`` concurrency, the stats
file, the frontier's private Redis and no politeness delay), with what real sites
add: robots.txt read by every crawler (nginx answers 404), every crawl confined to
the sites' hosts, and the page store and records database of ``frontier+pipelines``
in a temporary directory (``frontier+s3``: the page store in a bucket of the
benchmark's SeaweedFS server instead). ``wget`` is the reference for coverage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.crawls import BENCH, ROOT, Command, CrawlSpec, command

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

CRAWLERS = ("frontier", "frontier+pipelines", "plain", "wget")
# Also on demand (--crawlers): the frontier fetching resources too, as wget does, and
# the frontier with its pipelines storing pages to an S3-compatible server.
OPTIONAL = ("frontier+resources", "frontier+s3")
PLAIN_SPIDER = BENCH / "plainspiders.py"
# Seen-filter capacity: far above the few thousand URLs of the default corpora.
DEDUP_CAPACITY = 100_000
# Every crawler obeys robots.txt, as wget does by default.
SHARED: dict[str, Any] = {"ROBOTSTXT_OBEY": True}


@dataclass(frozen=True, slots=True)
class CrawlPlace:
    """Where one crawl runs: the roots, its scratch directory, the Redis and limits."""

    roots: Sequence[str]
    workdir: Path
    redis_url: str
    timeout: float
    # Settings that store pages in the benchmark's object store (frontier+s3).
    object_store: dict[str, str] | None = None


def crawl_command(name: str, place: CrawlPlace) -> Command:
    """The command line of crawl *name* (one of ``CRAWLERS``)."""
    if name == "wget":
        return wget_command(place)
    if name == "plain":
        spec = _spec(place, SHARED, spider_file=PLAIN_SPIDER)
        return _without_proxies(command("plain", spec))
    if name == "frontier":
        spec = _spec(place, {**SHARED, "ITEM_PIPELINES": {}})
    elif name == "frontier+resources":
        spec = _spec(place, {**SHARED, "ITEM_PIPELINES": {}, "BFS_FOLLOW": "resources"})
    elif name == "frontier+pipelines":
        spec = _spec(place, {**SHARED, **pipeline_places(place.workdir)})
    elif name == "frontier+s3":
        if place.object_store is None:
            raise ValueError("frontier+s3 needs the benchmark's object store")
        places = pipeline_places(place.workdir) | place.object_store
        spec = _spec(place, {**SHARED, **places})
    else:
        known = ", ".join((*CRAWLERS, *OPTIONAL))
        raise ValueError(f"unknown crawler {name!r}; choose from {known}")
    frontier = _without_proxies(command("frontier", spec))
    argv = [*frontier.argv, "-a", "scope=seed-hosts"]
    return Command(argv, frontier.cwd, frontier.env)


def _without_proxies(crawl: Command) -> Command:
    """*crawl* with no ``*_proxy`` variable: every request goes straight to
    loopback (Scrapy's HttpProxyMiddleware would send them through a proxy)."""
    env = {k: v for k, v in crawl.env.items() if not k.lower().endswith("_proxy")}
    return Command(crawl.argv, crawl.cwd, env)


def _spec(place: CrawlPlace, extra: dict[str, Any], **fields: Any) -> CrawlSpec:
    return CrawlSpec(
        seed=",".join(place.roots),
        redis_url=place.redis_url,
        total_pages=DEDUP_CAPACITY,
        timeout=place.timeout,
        stats_file=stats_file(place.workdir),
        extra=extra,
        **fields,
    )


def stats_file(workdir: Path) -> Path:
    """Where a Scrapy crawl's final stats go (``bench.statsfile``)."""
    return workdir / "stats.json"


def pipeline_places(workdir: Path) -> dict[str, str]:
    """The default pipelines' page store and records database, in *workdir*."""
    return {
        "PAGESTORE_URL": str(workdir / "pages"),
        "RECORDS_DATABASE_URL": f"sqlite:///{workdir / 'pages.db'}",
    }


def wget_command(place: CrawlPlace) -> Command:
    """One quiet recursive wget of every root, robots.txt obeyed, never off-host."""
    argv = [
        "wget", "--recursive", "--level=inf", "--no-parent", "--quiet",
        "-e", "robots=on", "--directory-prefix", str(place.workdir / "wget"),
        *place.roots,
    ]  # fmt: skip
    return Command(argv, ROOT, {"PATH": "/usr/bin:/bin", "HOME": str(place.workdir)})
