"""Lazy sites end to end (issue 26): under ``REVISIT_POLICY=adaptive`` a host
whose pages never change has its pages revisited at longer gaps, as a group, than
a host whose pages change at every visit; measured at the sites' request logs,
with the site factor switched off as the control."""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from contextlib import AbstractContextManager, ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.servers import serving

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.integration

LAZY, BUSY = "127.0.0.31", "127.0.0.32"
PAGES = 6
# Seconds of each crawl: the factor needs REVISIT_SITE_MIN_VISITS revisits of the
# host (here one round of its pages) and a look at the library, then a few visits
# to take the intervals there (at most a doubling a visit).
RUN = 20


class PagesSite(ThreadingHTTPServer):
    """An index linking /p0../p5; with *busy* every fetch of a page finds new text.
    Every request is logged as (seconds since start, path)."""

    def __init__(self, address: str, *, busy: bool) -> None:
        super().__init__((address, 0), _Handler)
        self.busy = busy
        self.started = time.monotonic()
        self.log: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}"

    def body(self, path: str) -> bytes:
        with self._lock:
            self.log.append((time.monotonic() - self.started, path))
            edition = len(self.log) if self.busy else 0
        if path == "/":
            links = "".join(f'<a href="/p{i}">page {i}</a> ' for i in range(PAGES))
            text = f"The index. {links}"
        else:
            words = " ".join(f"w{edition}x{i}" for i in range(40))
            text = f"Page {path}, edition {edition}: {words}"
        return f"<html><title>{path}</title><body>{text}</body></html>".encode()


class _Handler(BaseHTTPRequestHandler):
    server: PagesSite

    def do_GET(self) -> None:
        body = self.server.body(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Quiet: the site keeps its own log."""


def pages_site(address: str, *, busy: bool) -> AbstractContextManager[PagesSite]:
    return serving(PagesSite(address, busy=busy))


def last_gaps(site: PagesSite) -> list[float]:
    """Each page's last gap between two fetches, where its interval settled."""
    gaps = []
    for i in range(PAGES):
        times = [at for at, path in site.log if path == f"/p{i}"]
        gaps += [later - earlier for earlier, later in itertools.pairwise(times)][-1:]
    return gaps


async def crawl_both(
    settings: Callable[..., dict[str, Any]], tmp_path: Path, **overrides: Any
) -> tuple[list[float], list[float], dict[str, Any]]:
    """One adaptive crawl of the lazy and the busy host: each one's last gaps."""
    values: dict[str, Any] = {
        "RECORDS_DATABASE_URL": f"sqlite:///{tmp_path}/pages.db",
        "PAGESTORE_URL": str(tmp_path / "pages"),
        "REVISIT_POLICY": "adaptive",
        "REVISIT_INTERVAL": 1.0,
        "REVISIT_MIN_INTERVAL": 0.5,
        "REVISIT_MAX_INTERVAL": 8.0,
        "REVISIT_FEED_INTERVAL": 0.2,
        "REVISIT_CONDITIONAL": False,
        "REVISIT_SITE_MIN_VISITS": PAGES,
        "CLOSESPIDER_TIMEOUT": RUN,
        # The two crawls share Redis, and the lazy host's pages are near-duplicates
        # of each other and of the first crawl's: what near-duplicates teach (links
        # of copies dropped, a budget lowered) is not what this test is about.
        "NEARDUP_MAX_DISTANCE": 0,
    }
    with ExitStack() as stack:
        lazy = stack.enter_context(pages_site(LAZY, busy=False))
        busy = stack.enter_context(pages_site(BUSY, busy=True))
        crawler = get_crawler(BfsSpider, settings(**(values | overrides)))
        await crawler.crawl_async(
            seeds=f"{lazy.base}/,{busy.base}/", scope="seed-hosts"
        )
    assert crawler.stats is not None
    return last_gaps(lazy), last_gaps(busy), crawler.stats.get_stats()


@deferred_f_from_coro_f
async def test_a_lazy_host_s_pages_drift_to_longer_gaps_than_a_busy_host_s(
    settings, tmp_path
):
    lazy, busy, stats = await crawl_both(settings, tmp_path / "on")
    off_lazy, _, off_stats = await crawl_both(
        settings,
        tmp_path / "off",
        REVISIT_SITE_MIN_FACTOR=1.0,
        REVISIT_SITE_MAX_FACTOR=1.0,
    )
    assert len(lazy) == len(busy) == len(off_lazy) == PAGES
    assert (stats["revisit/lazy_sites"], stats["revisit/busy_sites"]) == (1, 1)
    assert (off_stats["revisit/lazy_sites"], off_stats["revisit/busy_sites"]) == (0, 0)
    gaps = {"lazy": lazy, "busy": busy, "lazy, factor off": off_lazy}
    # The lazy host's pages come back at longer gaps than without the site factor
    # (the control) ...
    assert statistics.mean(lazy) > 1.5 * statistics.mean(off_lazy), gaps
    # ... and than the busy host's, though adaptive itself keeps those (changed at
    # every visit: not worth chasing) near the ceiling, which their factor halves.
    assert statistics.mean(lazy) > 1.25 * statistics.mean(busy), gaps
