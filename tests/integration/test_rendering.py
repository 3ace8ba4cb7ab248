"""Rendering end to end: real Chromium, real Redis, the local site's pages for a
browser (tests/dynamicsite.py). Which pages were fetched and which were rendered is
read from the site's request log (a rendered page asks its host for a render mark),
never from the crawler's own stats."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
from typing import TYPE_CHECKING, Any

import psutil
import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.dynamicsite import app_index, links_path, rendered_app_page
from tests.integration.test_node_failures import run, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for
from tests.site import page_index, url_of

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

STATIC, SCRIPT, LAZY, SCROLL, THIRD_PARTY = range(5)
DYNAMIC = (SCRIPT, LAZY, SCROLL)
CRAWLED = (STATIC, *DYNAMIC)
# Host THIRD_PARTY is not crawled: the others' pages load a script from it, which a
# rendering crawler must not ask for (RENDER_BLOCK's default blocks third parties).
KINDS = {
    STATIC: "static",
    SCRIPT: f"script;third-party:{THIRD_PARTY}",
    LAZY: f"lazy:loadMore;third-party:{THIRD_PARTY}",
    SCROLL: f"scroll;third-party:{THIRD_PARTY}",
}
PAGES = 6
# The lazy host's function is called, and every page scrolled to its end.
ACTIONS = ["scroll", "loadMore"]
SAMPLE_PAGES = 2
# Longer than a render takes even on a loaded 2-core machine (the control below needs
# some gap under it without a delay; 0.8 s was not always).
DELAY = 1.5
# Seconds after which an in-process crawl is closed whatever it is doing (its finish
# reason then fails the test): every crawl here ends in well under a minute.
CRAWL_DEADLINE = 90


def rendering(
    settings: Callable[..., dict[str, Any]], mode: str, **overrides: Any
) -> dict[str, Any]:
    """Test settings for a crawl confined to the seeds' hosts, rendering in *mode*."""
    return settings(
        **{
            "BFS_SCOPE": "seed-hosts",
            "RENDER_MODE": mode,
            "RENDER_ACTION": ACTIONS,
            "RENDER_SETTLE": 0.1,
            "RENDER_SAMPLE_PAGES": SAMPLE_PAGES,
            "CLOSESPIDER_TIMEOUT": CRAWL_DEADLINE,
            **overrides,
        }
    )


async def crawl(settings: dict[str, Any], seeds: list[str]) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(seeds=",".join(seeds))
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def fetched(site: RunningSite, index: int) -> set[int]:
    """Pages of host *index* the site served (its log; subrequests left out)."""
    host = site.host(index)
    found = {
        page_index(r["path"], site.spec.pages)
        for r in site.pages()
        if r["host"] == host and r["status"] == 200
    }
    return {page for page in found if page is not None}


def asked(site: RunningSite, index: int) -> list[str]:
    """Every path host *index* was asked for."""
    return [r["path"] for r in site.log() if r["host"] == site.host(index)]


@deferred_f_from_coro_f
async def test_never_misses_the_links_scripts_write(settings):
    with running_site(hosts=5, pages=PAGES, links=2, cross=0.0, behave=KINDS) as site:
        await crawl(rendering(settings, "never"), site.seeds[:4])
        assert fetched(site, STATIC) == set(range(PAGES))
        for index in DYNAMIC:  # the root, and nothing behind its script links
            assert fetched(site, index) == {0}
            assert site.renders(index) == []


@pytest.mark.parametrize("mode", ["always", "auto"])
@deferred_f_from_coro_f
async def test_rendering_finds_the_links_scripts_write(settings, mode):
    with running_site(hosts=5, pages=PAGES, links=2, cross=0.0, behave=KINDS) as site:
        await crawl(rendering(settings, mode), site.seeds[:4])
        for index in CRAWLED:
            assert fetched(site, index) == set(range(PAGES)), index
        for index in DYNAMIC:  # rendered, the pages behind them were found
            assert set(site.renders(index)) >= {0}
        assert asked(site, THIRD_PARTY) == []


@deferred_f_from_coro_f
async def test_always_renders_every_page(settings):
    with running_site(hosts=5, pages=PAGES, links=2, cross=0.0, behave=KINDS) as site:
        await crawl(rendering(settings, "always"), site.seeds[:4])
        for index in CRAWLED:
            assert sorted(site.renders(index)) == list(range(PAGES)), index


@deferred_f_from_coro_f
async def test_auto_renders_a_static_host_only_while_sampling_it(settings):
    pages = 12
    behave = {STATIC: "static", SCRIPT: "script"}
    with running_site(hosts=2, pages=pages, links=2, cross=0.0, behave=behave) as site:
        await crawl(rendering(settings, "auto"), site.seeds)
        assert fetched(site, STATIC) == set(range(pages))
        assert fetched(site, SCRIPT) == set(range(pages))
        assert len(site.renders(STATIC)) <= SAMPLE_PAGES
        # The script host, rendered once it paid, not only while sampled.
        assert len(set(site.renders(SCRIPT))) > SAMPLE_PAGES


def app_pages(site: RunningSite, index: int) -> tuple[set[int], set[int]]:
    """The ``/app/`` pages of mixed host *index* the site served 200, and those a
    browser rendered."""
    host = site.host(index)
    served: set[int] = set()
    rendered: set[int] = set()
    for row in site.log():
        if row["host"] != host:
            continue
        page = app_index(row["path"], site.spec.pages)
        if page is not None and row["status"] == 200:
            served.add(page)
        if (mark := rendered_app_page(row["path"])) is not None:
            rendered.add(mark)
    return served, rendered


@deferred_f_from_coro_f
async def test_auto_renders_only_the_url_pattern_of_a_mixed_host_that_needs_it(
    settings,
):
    """Its root (static) and /app/0.html (script links) are sampled first: the host
    is found mixed, and each URL pattern decided on its own samples."""
    pages, samples = 10, 3
    with running_site(hosts=1, pages=pages, links=2, behave={0: "mixed"}) as site:
        await crawl(
            rendering(settings, "auto", RENDER_SAMPLE_PAGES=samples), site.seeds
        )
        served, rendered = app_pages(site, 0)
        assert fetched(site, 0) == set(range(pages))
        assert served == set(range(pages))  # behind script links only
        assert len(rendered) > samples  # /app/ rendered beyond its samples
        static_pattern = [page for page in site.renders(0) if page != 0]  # /p/
        assert len(static_pattern) <= samples


def gaps(site: RunningSite, index: int) -> list[float]:
    """Seconds between two page fetches in a row of host *index*, at the site (the
    rendered pages' own subrequests left out: they are part of the page)."""
    found = site.gaps_by_host()[site.host(index)]
    assert len(found) >= PAGES - 1, "too few fetches of the host to judge its gaps"
    return found


@pytest.mark.parametrize("mode", ["always", "auto"])
@deferred_f_from_coro_f
async def test_a_rendered_hosts_fetches_keep_its_delay(settings, mode):
    behave = {0: "script", 1: "lazy:loadMore"}
    with running_site(hosts=2, pages=PAGES, links=2, cross=0.0, behave=behave) as site:
        polite = {"POLITENESS_DAY_DELAY": DELAY, "POLITENESS_NIGHT_DELAY": DELAY}
        await crawl(rendering(settings, mode, **polite), site.seeds)
        assert site.renders(0)
        assert site.renders(1)
        assert min(gaps(site, 0)) >= DELAY
        assert min(gaps(site, 1)) >= DELAY


@deferred_f_from_coro_f
async def test_without_a_delay_rendered_fetches_come_closer(settings):
    """The control of the test above: its check fails when no delay holds (nor a
    delay learnt from a render that timed out on a loaded machine)."""
    with running_site(hosts=1, pages=PAGES, links=2, behave={0: "script"}) as site:
        await crawl(rendering(settings, "always", POLITENESS_BACKOFF=False), site.seeds)
        assert min(gaps(site, 0)) < DELAY


def crawl_command(redis_url: str, database: Path, seeds: list[str]) -> list[str]:
    return [
        *scrapy_crawl(
            f"REDIS_URL={redis_url}",
            f"RECORDS_DATABASE_URL=sqlite:///{database}",
            "RENDER_MODE=always",
            f'RENDER_ACTION=["{ACTIONS[0]}", "{ACTIONS[1]}"]',
            "RENDER_SETTLE=0.1",
            "FRONTIER_LEASE_TIMEOUT=6",
            "FRONTIER_MAINTENANCE_INTERVAL=0.5",
            "FRONTIER_NODE_TTL=2",  # the killed node's shards free up soon
            seeds=",".join(seeds),
        ),
        *("-a", "scope=seed-hosts"),
    ]


def kill_with_its_browser(process: subprocess.Popen[bytes]) -> list[str]:
    """kill -9 the crawl, then end what it started and left behind, each by pid,
    bounded in time; returns the names of those that outlived it by 10 s."""
    children = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    _gone, alive = psutil.wait_procs(children, timeout=10)
    left = []
    for child in alive:
        with contextlib.suppress(psutil.Error):
            left.append(child.name())
            child.kill()
    psutil.wait_procs(alive, timeout=5)
    return left


def answered(site: RunningSite, index: int, path: str) -> bool:
    """Whether host *index* answered *path* 200 (so far)."""
    return any(
        r["host"] == site.host(index) and r["path"] == path and r["status"] == 200
        for r in site.log()
    )


def recorded(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT url FROM pages").fetchall()
    connection.close()
    return [url for (url,) in rows]


def test_kill_9_while_rendering_loses_nothing(redis_url, tmp_path):
    database = tmp_path / "pages.db"
    behave = {0: "static", 1: "lazy:loadMore;slow:0.8", 2: "script"}
    with running_site(hosts=3, pages=5, links=2, cross=0.0, behave=behave) as site:
        command = crawl_command(redis_url, database, site.seeds)
        first = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            # A mark of the slow host: its page is in the browser, and its lazy-load
            # function's fetch will take another 0.8 s.
            assert wait_for(lambda: site.renders(1), timeout=60, interval=0.01)
        finally:
            left_behind = kill_with_its_browser(first)
        cut = site.renders(1)[-1]
        assert not answered(site, 1, links_path(cut))  # killed mid-render
        second = run([*command, "-s", "FRONTIER_NODE_NAME=successor"])
        assert second.returncode == 0, second.stderr[-3000:]
        every = {url_of(site.spec, i, j) for i in range(3) for j in range(5)}
        served = {f"http://{r['host']}{r['path']}" for r in site.pages()}
        renders_of_cut = site.renders(1).count(cut)
    urls = recorded(database)
    assert left_behind == []  # the killed crawl's browser went with it
    assert served == every  # every page fetched, after the kill and the resume
    assert renders_of_cut >= 2  # the page cut short was rendered again
    assert sorted(set(urls)) == sorted(every)  # and every page recorded
    assert len(urls) == len(set(urls))
