"""Revisits end to end: a crawl with REVISIT_POLICY on fetches pages again as they
change, with conditional requests, against a real HTTP site on loopback whose pages
change, vanish and appear on a timeline the test sets."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.integration.test_many_nodes import stat_value
from tests.integration.test_node_failures import scrapy_crawl
from tests.servers import ROOT, serving

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
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


def changing_site() -> AbstractContextManager[ChangingSite]:
    return serving(ChangingSite())


def revisit_settings(
    settings: Callable[..., dict[str, Any]], tmp_path: Path, **overrides: Any
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "RECORDS_DATABASE_URL": f"sqlite:///{tmp_path}/pages.db",
        "PAGESTORE_URL": str(tmp_path / "pages"),
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


def redis_text(client: Any) -> list[bytes]:
    """Every key name and value the crawl's Redis holds, as bytes."""
    texts: list[bytes] = []
    for key in client.scan_iter(count=1000):
        texts.append(key)
        kind = client.type(key)
        if kind == b"string":
            texts.append(client.get(key))
        elif kind == b"hash":
            texts.extend(b"%s=%s" % item for item in client.hgetall(key).items())
        elif kind == b"list":
            texts.extend(client.lrange(key, 0, -1))
        elif kind == b"set":
            texts.extend(client.smembers(key))
        elif kind == b"zset":
            texts.extend(
                member for member, _score in client.zrange(key, 0, -1, withscores=True)
            )
        elif kind == b"stream":
            texts.extend(repr(entry).encode() for entry in client.xrange(key))
    return texts


@deferred_f_from_coro_f
async def test_redis_holds_nothing_of_a_url_that_is_not_due(settings, tmp_path, redis):
    with changing_site() as site:
        crawler = get_crawler(
            BfsSpider,
            revisit_settings(
                settings,
                tmp_path,
                REVISIT_INTERVAL=60.0,
                REVISIT_MAX_INTERVAL=120.0,
                CLOSESPIDER_TIMEOUT=3,
            ),
        )
        await crawler.crawl_async(seeds=f"{site.base}/", scope="seed-hosts")
    assert len(library(tmp_path)) == 4  # every page is in the URL library
    texts = redis_text(redis)
    assert texts  # the crawl's state is there: nodes, counters, the seen filter
    for path in ("/a", "/b", "/c"):
        url = f"{site.base}{path}".encode()
        assert not [text for text in texts if url in text]


def test_two_nodes_revisit_each_page_once_per_due(redis_url, postgres_url):
    """Two crawler processes, one URL library in PostgreSQL (a schema of its own,
    dropped after the test): each page is revisited once per due, whichever feeder
    claims it."""
    settings = [
        f"REDIS_URL={redis_url}",
        f"RECORDS_DATABASE_URL={postgres_url}",
        "REVISIT_POLICY=uniform",
        "REVISIT_INTERVAL=1.0",
        "REVISIT_MIN_INTERVAL=0.5",
        "REVISIT_MAX_INTERVAL=10",
        "REVISIT_FEED_INTERVAL=0.1",
        "FRONTIER_MAINTENANCE_INTERVAL=0.3",
        "CLOSESPIDER_TIMEOUT=10",
    ]
    with changing_site() as site:
        nodes = [
            subprocess.Popen(
                [
                    *scrapy_crawl(*settings, seeds=f"{site.base}/"),
                    "-a",
                    "scope=seed-hosts",
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _node in range(2)  # the same seed: fetched once, scope on both
        ]
        outputs = [node.communicate(timeout=120)[1] for node in nodes]
    errors = [line for out in outputs for line in out.splitlines() if "ERROR" in line]
    assert [node.returncode for node in nodes] == [0, 0], errors
    for path in ("/", "/a", "/b"):
        times = [at for at, _status, _sent in fetches(site, path)]
        assert len(times) >= 3, path
        # One visit per due: dues are an interval (1 s) apart and no visit comes
        # before its due, so a page has at most one fetch a second past its first
        # (a late visit's successor may come sooner than a second after it); URLs
        # claimed twice would be fetched twice per due.
        assert len(times) <= (times[-1] - times[0]) / 1.0 + 2, (path, times)
    claimed = sum(stat_value(output, "revisit/due") for output in outputs)
    revisited = sum(stat_value(output, "revisit/fetched") for output in outputs)
    assert claimed >= revisited > 0
