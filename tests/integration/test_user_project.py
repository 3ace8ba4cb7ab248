"""A Scrapy project of a user's own (tests/userproject: its own scrapy.cfg, settings
that only enable the add-on and name the Redis) crawls through the frontier with
spiders of every usual kind, on one node and on two, run as its user runs them:
``scrapy crawl SPIDER -O items.jsonl`` in the project's directory.

What a page's fetches were is read from the test site's request log, never from the
crawler's own account; what the spider produced, from the exported feed.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from crawler import __version__
from tests.integration.test_node_failures import page_fetches
from tests.integration.test_records import pages as scrapy_pages
from tests.integration.userprojectruns import (
    FAST,
    by_url,
    check_page_items,
    copy_project,
    crawl,
    each_page_once,
    exported,
    hosts_argument,
    pages_of,
    reachable,
    scrapy_command,
    start,
    succeeded,
    title,
    wait,
)
from tests.servers import running_site
from tests.site import url_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


def test_a_spider_with_start_urls_fetches_each_page_once_with_its_meta_and_cb_kwargs(
    project, redis_url
):
    with running_site(hosts=3, pages=12, links=3) as site:
        done, items = crawl(project, redis_url, "pages", hosts_argument(site, 2))
        fetched = page_fetches(site)
    assert succeeded(done), done.stderr[-5000:]
    depths = reachable(site.spec, {0, 1})
    assert fetched == each_page_once(depths)  # host 2 never
    check_page_items(site.spec, items, fetched)


def test_components_of_the_project_s_own_run_beside_the_frontier_s(project, redis_url):
    own = (
        'DOWNLOADER_MIDDLEWARES={"userproject.middlewares.ProjectHeaderMiddleware": 543}',
        'ITEM_PIPELINES={"userproject.pipelines.StampPipeline": 300}',
    )
    with running_site(hosts=2, pages=6, links=2) as site:
        done, items = crawl(
            project, redis_url, "pages", hosts_argument(site, 2), settings=(*FAST, *own)
        )
        fetched = page_fetches(site)
        rows = site.pages()
    assert succeeded(done), done.stderr[-5000:]
    assert fetched == each_page_once(reachable(site.spec, {0, 1}))
    assert all(row["node"] == "userproject" for row in rows)  # the project's own
    # The frontier's User-Agents, naming the project's bot (BOT_NAME).
    assert all(f"compatible; userproject/{__version__};" in row["ua"] for row in rows)
    check_page_items(site.spec, items, fetched)
    assert all(item["stamped"] for item in items)


@pytest.mark.parametrize(
    ("obey", "refusal"),
    # Obeying robots.txt, an unreachable one forbids the host (RFC 9309): the
    # request is ignored; else the refused connection itself comes to the errback.
    [("True", "IgnoreRequest"), ("False", "DownloadConnectionRefusedError")],
)
def test_a_spider_with_async_start_gets_its_callbacks_errbacks_and_carried_items(
    project, redis_url, obey, refusal
):
    refused = closed_port()
    with running_site(hosts=2, pages=5, links=2) as site:
        done, items = crawl(
            project,
            redis_url,
            "starts",
            hosts_argument(site, 2),
            f"refused=127.0.0.2:{refused}",
            # One later try of the refused host, soon: then its failure is final.
            settings=(
                *FAST,
                f"ROBOTSTXT_OBEY={obey}",
                "RETRY_LATER_DELAYS=0.2",
                "ROBOTS_ERROR_RETRY_DELAY=0.2",
            ),
        )
        fetched = page_fetches(site)
    assert succeeded(done), done.stderr[-5000:]
    assert fetched == Counter([(0, 0), (1, 0), (0, 1), (1, 1), (0, None)])
    roots = [url_of(site.spec, host, 0) for host in (0, 1)]
    missing = f"http://{site.host(0)}/missing.html"
    refused_url = f"http://127.0.0.2:{refused}/"
    failures = by_url(items, "failed")
    assert failures == {
        missing: {
            "failed": missing,
            "status": 404,
            "error": "HttpError",
            "cb_kwargs": {"host_index": 0},
            "item": {"seed": missing, "host_index": 0},
        },
        refused_url: {
            "failed": refused_url,
            "status": None,
            "error": refusal,
            "cb_kwargs": {"host_index": -1},
            "item": {"seed": refused_url, "host_index": -1},
        },
    }
    assert by_url([item for item in items if "failed" not in item]) == {
        **{
            root: {
                "seed": root,
                "host_index": host,
                "url": root,
                "title": title((host, 0)),
            }
            for host, root in enumerate(roots)
        },
        **{
            url_of(site.spec, host, 1): {
                "root": root,
                "host_index": host,
                "url": url_of(site.spec, host, 1),
                "title": title((host, 1)),
                "root_title": title((host, 0)),
            }
            for host, root in enumerate(roots)
        },
    }


def closed_port() -> int:
    """A port of 127.0.0.2 nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_crawl_spider_follows_its_rules_once_per_page(project, redis_url):
    with running_site(hosts=3, pages=12, links=3) as site:
        done, items = crawl(project, redis_url, "rules", hosts_argument(site, 2))
        fetched = page_fetches(site)
    assert succeeded(done), done.stderr[-5000:]
    # The rule follows page links (/p/N.html) only, so no other host's root.
    depths = reachable(site.spec, {0, 1}, follows=lambda page: page[1] != 0)
    assert fetched == Counter(depths.keys())
    pages = pages_of(site.spec)
    items_by_url = by_url(items)
    assert {pages[url] for url in items_by_url} == set(depths)
    for url, item in items_by_url.items():
        assert item["title"] == title(pages[url])
        if pages[url] != (0, 0):
            assert item["rule"] == "page", item  # the rule's cb_kwargs
            assert item["link_text"].startswith("link "), item  # CrawlSpider's meta


@pytest.mark.parametrize("where", ["sitemap.xml", "robots.txt"])
def test_a_sitemap_spider_fetches_every_page_its_sitemaps_list_once(
    project, redis_url, where
):
    robots = {0: "sitemap", 1: "sitemap"} if where == "robots.txt" else None
    with running_site(hosts=2, pages=6, links=2, robots=robots) as site:
        arguments = [hosts_argument(site, 2)] + (["robots=1"] if robots else [])
        done, items = crawl(project, redis_url, "sitemap", *arguments)
        fetched = page_fetches(site)
        sitemaps = Counter(
            (row["host"], row["path"]) for row in site.log() if "sitemap" in row["path"]
        )
    assert succeeded(done), done.stderr[-5000:]
    every_page = pages_of(site.spec)
    # Each page once, and each host's two sitemaps (which are no pages).
    assert fetched == Counter(every_page.values()) + Counter(
        {(0, None): 2, (1, None): 2}
    )
    assert sitemaps == Counter(
        (site.host(host), path)
        for host in (0, 1)
        for path in ("/sitemap.xml", "/sitemap-pages.xml")
    )
    assert by_url(items) == {
        url: {"url": url, "kind": "page" if page[1] else "root", "title": title(page)}
        for url, page in every_page.items()
    }


@pytest.mark.parametrize(
    "repair",
    [
        (),
        ("FRONTIER_DEPTH_REPAIR=False",),
    ],
    ids=["defaults", "no-depth-repair"],
)
def test_two_nodes_of_one_spider_share_the_crawl_each_page_fetched_once(
    project, redis_url, repair
):
    # A politeness delay makes the crawl last long enough for both nodes to join
    # (and lets hosts run ahead of the slowest); six hosts make it likely that
    # each node owns some (not asserted: rendezvous hashing decides).
    delays = ("POLITENESS_DAY_DELAY=0.3", "POLITENESS_NIGHT_DELAY=0.3")
    settings = (*delays, "POLITENESS_JITTER=0", *repair)
    with running_site(hosts=7, pages=10, links=3) as site:
        argument = hosts_argument(site, 6)
        nodes = [
            start(
                scrapy_command(
                    "pages", argument, settings=settings, output=f"{node}.jsonl"
                ),
                project,
                redis_url,
                project / f"{node}.log",
            )
            for node in "ab"
        ]
        codes = [wait(process) for process in nodes]
        fetched = page_fetches(site)
    logs = "\n".join((project / f"{node}.log").read_text("utf-8") for node in "ab")
    assert codes == [0, 0], logs[-5000:]
    assert " ERROR: " not in logs, logs[-5000:]
    depths = reachable(site.spec, set(range(6)))
    # Once in total, whichever node: but each node's start request is its own.
    assert fetched == each_page_once(depths)
    items = exported(project / "a.jsonl") + exported(project / "b.jsonl")
    check_page_items(site.spec, items, fetched)


def test_a_spider_s_own_items_of_every_kind_get_their_pages_recorded_and_stored(
    project, redis_url
):
    """Dicts, Items, dataclasses and attrs items alike: each response the spider
    handled is recorded once (whatever it yielded, nothing included) and stored;
    the project's feed holds its own items only."""
    with running_site(hosts=2, pages=10, links=2) as site:
        done, items = crawl(project, redis_url, "kinds", hosts_argument(site, 1))
        fetched = page_fetches(site)
    assert succeeded(done), done.stderr[-5000:]
    depths = reachable(site.spec, {0})
    assert fetched == each_page_once(depths)
    pages = pages_of(site.spec)
    kinds = ("dict", "item", "dataclass", "attrs")
    assert by_url(items) == {
        url: {"url": url, "title": title(page), "kind": kinds[page[1] % 5]}
        for url, page in pages.items()
        if page in depths and page[1] % 5 < len(kinds)
    }
    # `scrapy pages` on the project's records database (its default place), the
    # rows of its crawl (the spider's name).
    database = f"sqlite:///{project}/.crawl/pages.db"
    listed = scrapy_pages(database, "--prefix", "kinds", "--format", "jsonl")
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = by_url([json.loads(line) for line in listed.stdout.splitlines()])
    assert {pages[url]: row["depth"] for url, row in rows.items()} == depths
    assert any(pages[url][1] % 5 == 4 for url in rows)  # a page with no item
    for url, row in rows.items():
        assert (row["status"], row["fate"]) == (200, "fetched"), row
        assert row["title"] == title(pages[url])
        stored = (project / ".crawl" / "pages" / row["store_path"]).read_bytes()
        assert (len(stored), row["length"]) == (row["length"], len(stored))
        assert hashlib.sha256(stored).hexdigest() == row["content_hash"]
