"""Revisits end to end: a crawl with REVISIT_POLICY on fetches pages again as they
change, with conditional requests, against a real HTTP site on loopback whose pages
change, vanish and appear on a timeline the test sets."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

ADDRESS = "127.0.0.9"
# Seconds after the site starts when page /a changes, /c is removed and the index
# starts linking /new.
CHANGE_AT = 2.5


class ChangingSite(ThreadingHTTPServer):
    """Pages whose body depends on the time since the site started; every request
    is logged as (seconds since start, path, status, If-None-Match sent)."""

    def __init__(self) -> None:
        super().__init__((ADDRESS, 0), _Handler)
        self.started = time.monotonic()
        self.log: list[tuple[float, str, int, str | None]] = []

    @property
    def base(self) -> str:
        return f"http://{ADDRESS}:{self.server_address[1]}"

    def page(self, path: str) -> bytes | None:
        """The body *path* has now, None when it does not exist."""
        changed = time.monotonic() - self.started >= CHANGE_AT
        links = ["/a", "/b", "/c", *(["/new"] if changed else [])]
        bodies = {
            "/": "".join(f'<a href="{link}">{link}</a>' for link in links),
            "/a": "version 2" if changed else "version 1",
            "/b": "never changes",
            "/c": None if changed else "soon gone",
            "/new": "found on a revisit" if changed else None,
        }
        body = bodies.get(path)
        if body is None:
            return None
        return f"<html><title>{path}</title><body>{body}</body></html>".encode()


class _Handler(BaseHTTPRequestHandler):
    server: ChangingSite

    def do_GET(self) -> None:
        body = self.server.page(self.path)
        validator = self.headers.get("If-None-Match")
        if body is None:
            status, body = 404, b"not here"
        else:
            etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
            status = 304 if validator == etag else 200
        elapsed = time.monotonic() - self.server.started
        self.server.log.append((elapsed, self.path, status, validator))
        self.send_response(status)
        if status != 404:
            self.send_header("ETag", etag)
        if status == 304:
            self.end_headers()
            return
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Quiet: the site keeps its own log."""


@contextmanager
def changing_site() -> Iterator[ChangingSite]:
    site = ChangingSite()
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()
        thread.join(timeout=10)


def revisit_settings(
    settings: Callable[..., dict[str, Any]], tmp_path: Path, **overrides: Any
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "RECORDS_DATABASE_URL": f"sqlite:///{tmp_path}/pages.db",
        "PAGESTORE_DIR": str(tmp_path / "pages"),
        "REVISIT_POLICY": "uniform",
        "REVISIT_INTERVAL": 1.0,
        "REVISIT_MIN_INTERVAL": 0.5,
        "REVISIT_MAX_INTERVAL": 10.0,
        "REVISIT_FEED_INTERVAL": 0.2,
        "REVISIT_GONE_AFTER": 2,
        "CLOSESPIDER_TIMEOUT": 8,
    }
    return settings(**(values | overrides))


def library(tmp_path: Path) -> dict[str, dict[str, Any]]:
    connection = sqlite3.connect(tmp_path / "pages.db")
    connection.row_factory = sqlite3.Row
    try:
        rows = connection.execute("SELECT * FROM revisits").fetchall()
    finally:
        connection.close()
    return {row["url"]: dict(row) for row in rows}


def fetches(site: ChangingSite, path: str) -> list[tuple[float, int, str | None]]:
    return [(at, status, sent) for at, p, status, sent in site.log if p == path]


@deferred_f_from_coro_f
async def test_pages_are_revisited_as_they_change(settings, tmp_path):
    with changing_site() as site:
        crawler = get_crawler(BfsSpider, revisit_settings(settings, tmp_path))
        await crawler.crawl_async(seeds=f"{site.base}/", scope="seed-hosts")
    stats = crawler.stats.get_stats()
    # The crawl ran until it was stopped: revisits keep it open.
    assert stats["finish_reason"] == "closespider_timeout"

    # An unchanged page: every revisit asks with its ETag and costs a 304.
    unchanged = fetches(site, "/b")
    assert len(unchanged) >= 3
    assert unchanged[0][1:] == (200, None)
    assert all(status == 304 and sent for _at, status, sent in unchanged[1:])
    # A page that changed is fetched whole again, and the page store has the new one.
    changed = fetches(site, "/a")
    assert any(at >= CHANGE_AT and status == 200 for at, status, _ in changed)
    stored = (tmp_path / "pages").rglob("a*")
    assert any(b"version 2" in path.read_bytes() for path in stored if path.is_file())
    # A page that went away is tried REVISIT_GONE_AFTER times, then no more.
    gone = fetches(site, "/c")
    assert [status for _at, status, _ in gone if status == 404] == [404, 404]
    assert gone[-1][1] == 404
    # A link that appeared on a revisited page is crawled.
    assert any(status == 200 for _at, status, _ in fetches(site, "/new"))

    entries = library(tmp_path)
    assert entries[f"{site.base}/c"]["state"] == "gone"
    assert entries[f"{site.base}/b"]["state"] == "active"
    assert entries[f"{site.base}/b"]["last_outcome"] == "not_modified"
    assert stats["revisit/gone"] == 1
    assert stats["revisit/not_modified"] >= len(unchanged) - 1
    assert stats["revisit/changed"] >= 2  # /a and the index
    assert stats["revisit/due"] >= stats["revisit/fetched"]


@deferred_f_from_coro_f
async def test_without_validators_a_revisit_is_a_plain_fetch(settings, tmp_path):
    with changing_site() as site:
        crawler = get_crawler(
            BfsSpider,
            revisit_settings(
                settings, tmp_path, REVISIT_CONDITIONAL=False, CLOSESPIDER_TIMEOUT=4
            ),
        )
        await crawler.crawl_async(seeds=f"{site.base}/", scope="seed-hosts")
    unchanged = fetches(site, "/b")
    assert len(unchanged) >= 2
    assert all(status == 200 and sent is None for _at, status, sent in unchanged)
    assert crawler.stats.get_value("revisit/unchanged") >= len(unchanged) - 1
    assert crawler.stats.get_value("revisit/not_modified") is None


@deferred_f_from_coro_f
async def test_revisits_off_fetch_each_page_once_and_end(settings, tmp_path):
    with changing_site() as site:
        crawler = get_crawler(
            BfsSpider, revisit_settings(settings, tmp_path, REVISIT_POLICY="off")
        )
        await crawler.crawl_async(seeds=f"{site.base}/", scope="seed-hosts")
    assert crawler.stats.get_value("finish_reason") == "finished"
    paths = [path for _at, path, _status, _sent in site.log]
    assert sorted(paths) == ["/", "/a", "/b", "/c"]
    with sqlite3.connect(tmp_path / "pages.db") as connection:
        tables = {
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        }
    assert "revisits" not in tables
