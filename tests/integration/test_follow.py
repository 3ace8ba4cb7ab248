"""BFS_FOLLOW on a small static site served over loopback: ``pages`` follows links
to pages (frames and ``<link rel=next>`` included) and counts the links to
resources it leaves; ``resources`` fetches those and what pages embed, stores and
records them, and reads CSS and XML for links but never an image or a text file."""

from __future__ import annotations

import contextlib
import logging
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.policy.storepath import store_path
from crawler.records.database import RecordsDatabase
from crawler.spiders.bfs import BfsSpider

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

HOST = "127.0.0.13"
ELSEWHERE = "http://127.0.0.14:1/away.html"  # out of scope: never asked for

INDEX = f"""<!DOCTYPE html><html><head><title>Index</title>
<link rel="stylesheet" href="style.css"><link rel="icon" href="favicon.ico">
<link rel="next" href="next.html">
<link rel="alternate" type="application/rss+xml" href="feed.xml">
<script src="app.js"></script></head><body>
<a href="page.html#part">page</a> <a href="doc.pdf">pdf</a> <a href="pack.zip">zip</a>
<a href="{ELSEWHERE}">away</a> <a href="notes.txt">notes</a>
<img src="logo.png" srcset="logo-2x.png 2x"><iframe src="frame.html"></iframe>
<div style="background: url('tile.gif')"></div></body></html>"""
# Each file's body; the comments say who leads to it.
FILES = {
    "index.html": INDEX,
    "page.html": "<title>Page</title><a href='index.html'>back</a>",
    "next.html": "<title>Next</title>",  # <link rel=next>
    "frame.html": "<title>Frame</title>",  # <iframe>
    "feed.xml": "<rss><channel><link>http://{host}/from-feed.html</link></channel></rss>",
    "from-feed.html": "<title>From the feed</title>",
    "style.css": "@import 'more.css'; body { background: url(bg.png) }",
    "more.css": "p { color: red }",
    "bg.png": "not parsed <a href='from-image.html'>",
    "logo.png": "not parsed <a href='from-image.html'>",
    "logo-2x.png": "png",
    "tile.gif": "gif",
    "favicon.ico": "ico",
    "app.js": "var a = '<a href=\"from-script.html\">';",
    "doc.pdf": "%PDF-1.4",
    "pack.zip": "PK",
    "notes.txt": "not parsed <a href='from-text.html'>",
    "from-image.html": "never linked by a page",
    "from-text.html": "never linked by a page",
    "from-script.html": "never linked by a page",
}
PAGES = {"index.html", "page.html", "next.html", "frame.html", "feed.xml", "notes.txt"}
RESOURCES = {
    "style.css", "more.css", "bg.png", "logo.png", "logo-2x.png", "tile.gif",
    "favicon.ico", "app.js", "doc.pdf", "pack.zip", "from-feed.html",
}  # fmt: skip


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]


@contextlib.contextmanager
def static_site(root: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve FILES from *root* on HOST; yields the base URL and the paths asked."""
    server = ThreadingHTTPServer((HOST, 0), partial(_Handler, directory=str(root)))
    host = f"{HOST}:{server.server_address[1]}"
    for name, body in FILES.items():
        (root / name).write_text(body.replace("{host}", host))
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}/", server.paths  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


async def crawl_site(settings, tmp_path: Path, follow: str) -> tuple[Any, set[str]]:
    site_root = tmp_path / "site"
    site_root.mkdir()
    with static_site(site_root) as (base, paths):
        values = settings(
            BFS_FOLLOW=follow,
            PAGESTORE_URL=str(tmp_path / "store"),
            RECORDS_DATABASE_URL=f"sqlite:///{tmp_path}/pages.db",
            ROBOTSTXT_OBEY=False,
        )
        crawler = get_crawler(BfsSpider, values)
        await crawler.crawl_async(seeds=base + "index.html", scope="seed-hosts")
    return crawler, {path.lstrip("/") for path in paths}


def recorded(tmp_path: Path) -> dict[str, dict[str, Any]]:
    database = RecordsDatabase(f"sqlite:///{tmp_path}/pages.db").open(create=False)
    try:
        return {row["url"].rsplit("/", 1)[1]: row for row in database.query()}
    finally:
        database.close()


@deferred_f_from_coro_f
async def test_pages_follows_pages_and_counts_the_resources_it_leaves(
    settings, tmp_path, caplog
):
    caplog.set_level(logging.INFO, logger="bfs")
    crawler, asked = await crawl_site(settings, tmp_path, "pages")
    said = [r.getMessage() for r in caplog.records if "BFS_FOLLOW" in r.getMessage()]
    assert len(said) == 1, said
    assert "are not fetched" in said[0]
    assert asked == PAGES
    assert set(recorded(tmp_path)) == PAGES
    # The links to doc.pdf and pack.zip: what the page embeds is not even read.
    assert crawler.stats.get_value("bfs/resources_not_followed") == 2


@deferred_f_from_coro_f
async def test_resources_fetches_stores_and_records_them_but_reads_only_markup_and_css(
    settings, tmp_path
):
    crawler, asked = await crawl_site(settings, tmp_path, "resources")
    assert asked == PAGES | RESOURCES
    records = recorded(tmp_path)
    assert set(records) == PAGES | RESOURCES
    for name in ("bg.png", "doc.pdf", "style.css"):
        stored = tmp_path / "store" / store_path(records[name]["url"])
        assert stored.read_text() == FILES[name]
    assert records["style.css"]["links"] == 2  # more.css and bg.png
    assert records["feed.xml"]["links"] == 1
    assert records["logo.png"]["links"] == 0
    assert crawler.stats.get_value("bfs/resources_not_followed") is None
