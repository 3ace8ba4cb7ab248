"""The page store pipeline: its edge cases, then whole crawls of the local site."""

from __future__ import annotations

import hashlib
import logging
import os
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.items import PageRecord
from crawler.middlewares.reparse import ReparseMiddleware
from crawler.pipelines.pagestore import PageStorePipeline
from crawler.policy.storepath import store_path
from crawler.spiders.bfs import BfsSpider
from crawler.storage.errors import UnsafePathError
from crawler.storage.local import write_file
from tests.servers import running_site
from tests.site import HOSTILE_INDEX, HOSTILE_LINKS, hostile_body

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def record(
    url: str, body: bytes = b"<html>page</html>", status: int = 200
) -> PageRecord:
    return PageRecord(
        url=url, status=status, depth=0, title=None, content_type="text/html",
        length=len(body), links=0, fetched_at="2025-01-01T00:00:00Z", body=body,
    )  # fmt: skip


def pipeline(root: Path) -> tuple[PageStorePipeline, Any]:
    crawler = get_crawler(settings_dict={"PAGESTORE_URL": str(root)})
    crawler.spider = crawler._create_spider("test")  # for extra={"spider": ...}
    store = build_from_crawler(PageStorePipeline, crawler)
    store.open_spider()
    return store, crawler.stats


def files_under(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_symlink() or not p.is_dir())


@pytest.mark.parametrize("value", ["", None])
def test_an_empty_directory_turns_the_store_off(value):
    crawler = get_crawler(settings_dict={"PAGESTORE_URL": value})
    with pytest.raises(NotConfigured):
        build_from_crawler(PageStorePipeline, crawler)


@deferred_f_from_coro_f
async def test_a_page_is_stored_where_the_scheme_says(tmp_path):
    store, stats = pipeline(tmp_path / "pages")
    item = await store.process_item(record("http://h:81/A/b.html?x=1", b"body"))
    assert item.store_path == "http/h_81/%41@/b.html+x%3D1"
    assert (tmp_path / "pages" / item.store_path).read_bytes() == b"body"
    assert stats.get_value("pagestore/saved") == 1


@deferred_f_from_coro_f
async def test_a_failure_record_stores_nothing(tmp_path):
    store, stats = pipeline(tmp_path / "pages")
    item = await store.process_item(record("http://h/a", b"", status=0))
    assert item.store_path is None
    assert files_under(tmp_path) == []
    assert stats.get_value("pagestore/saved") is None


@deferred_f_from_coro_f
async def test_a_large_page_is_written_from_a_thread(tmp_path):
    store, _ = pipeline(tmp_path / "pages")
    body = os.urandom(3 * 1024 * 1024)
    item = await store.process_item(record("https://h/big.bin", body))
    assert (tmp_path / "pages" / item.store_path).read_bytes() == body


@deferred_f_from_coro_f
async def test_a_url_without_a_path_is_counted_and_logged_once(tmp_path, caplog):
    store, stats = pipeline(tmp_path / "pages")
    with caplog.at_level(logging.WARNING):
        for url in ("ftp://h/a", "http:///nohost", "http://h:port/"):
            item = await store.process_item(record(url))
            assert item.store_path is None
    assert stats.get_value("pagestore/rejected_path") == 3
    assert caplog.text.count("Page store skipped") == 1
    assert files_under(tmp_path) == []


@deferred_f_from_coro_f
async def test_a_symlink_in_the_store_cannot_send_a_page_outside(tmp_path, caplog):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "pages" / "http").mkdir(parents=True)
    (tmp_path / "pages" / "http" / "h").symlink_to(outside)
    store, stats = pipeline(tmp_path / "pages")
    with caplog.at_level(logging.WARNING):
        item = await store.process_item(record("http://h/a/b"))
    assert item.store_path is None
    assert list(outside.iterdir()) == []
    assert stats.get_value("pagestore/rejected_path") == 1


def test_write_file_refuses_paths_that_step_out(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for relative in ("../x", "/etc/x", "a/../../x", "a/..", "a/\0", "..", "/", "."):
        with pytest.raises(UnsafePathError):
            write_file(root, relative, b"x")
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafePathError):
        write_file(root, "link", b"x")  # would replace the link only
    assert (root / "link").is_symlink()
    assert [p.name for p in tmp_path.rglob("*")] == ["root", "link"]


@deferred_f_from_coro_f
async def test_a_write_error_is_counted_and_the_crawl_goes_on(tmp_path, caplog):
    store, stats = pipeline(tmp_path / "pages")
    blocker = tmp_path / "pages" / "http" / "h" / "a"
    blocker.mkdir(parents=True)  # a directory where the page's file should go
    with caplog.at_level(logging.ERROR):
        first = await store.process_item(record("http://h/a"))
        await store.process_item(record("http://h/a"))
        other = await store.process_item(record("http://h/b"))
    assert first.store_path is None
    assert other.store_path == "http/h/b"
    assert stats.get_value("pagestore/errors") == 2
    assert caplog.text.count("Page store could not write") == 1
    assert not [p for p in files_under(tmp_path) if p.name.startswith(".tmp-")]


# --- whole crawls ------------------------------------------------------------------


async def crawl_and_collect(settings: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    items: list[PageRecord] = []
    crawler.signals.connect(
        lambda item, **_: items.append(item), signal=signals.item_scraped, weak=False
    )
    await crawler.crawl_async(**kwargs)
    return crawler, items


def assert_stored_as_the_scheme_says(root: Path, items: list[PageRecord]) -> None:
    """Each record's page is at its scheme path, with the bytes the site sent."""
    for item in items:
        assert item.store_path == store_path(item.url).as_posix()
        body = (root / item.store_path).read_bytes()
        assert hashlib.sha256(body).hexdigest() == item.content_hash
    stored = {item.store_path for item in items}
    assert len(stored) == len({item.url for item in items})
    assert len({path.lower() for path in stored}) == len(stored)
    on_disk = {p.relative_to(root).as_posix() for p in files_under(root)}
    assert on_disk == stored  # nothing else: no temp file, no stray page


@deferred_f_from_coro_f
async def test_a_crawl_stores_every_page_the_site_served(site, settings, tmp_path):
    root = tmp_path / "pages"
    crawler, items = await crawl_and_collect(
        settings(PAGESTORE_URL=str(root)), seeds=site.seeds[0]
    )
    # One record per page served, whether or not depth repair answered a page again
    # from the store at a shorter depth (that only lowers its row's depth).
    assert len({item.url for item in items}) == len(site.pages())
    assert len(items) == len(site.pages())
    assert crawler.stats.get_value("pagestore/saved") == len(items)
    assert_stored_as_the_scheme_says(root, items)
    assert sorted(p.name for p in root.iterdir()) == ["http"]


@deferred_f_from_coro_f
async def test_hostile_urls_land_where_the_scheme_says_and_never_outside(
    settings, tmp_path
):
    sandbox = tmp_path / "sandbox"
    root = sandbox / "deep" / "pages"
    with running_site(hosts=1, pages=2, hostile=True) as site:
        crawler, items = await crawl_and_collect(
            settings(PAGESTORE_URL=str(root), DEPTH_LIMIT=1),
            seeds=f"http://{site.host(0)}{HOSTILE_INDEX}",
        )
        served = [row for row in site.pages() if row["status"] == 200]
    assert len(items) == len(served) >= len(HOSTILE_LINKS) - 5  # some are one URL
    assert crawler.stats.get_value("pagestore/saved") == len(items)
    assert_stored_as_the_scheme_says(root, items)
    bodies = {(root / item.store_path).read_bytes() for item in items}
    expected = {
        hostile_body(row["path"]) for row in served if row["path"] != HOSTILE_INDEX
    }
    assert expected <= bodies
    assert len(expected) == len(served) - 1
    assert all(p.is_relative_to(root) for p in files_under(tmp_path))
    host = root / "http" / site.host(0).replace(":", "_")
    assert (host / "%41.html").is_file()
    assert (host / "a.html").is_file()
    assert (host / "dir").is_file()
    assert (host / "dir@" / "index.html").is_file()
    assert (host / "dir@" / "index%2Ehtml").is_file()
    assert (host / "x@" / "%2E%2E@" / "%2E%2E@" / "etc@" / "passwd").is_file()


def test_the_pipeline_and_the_reparse_middleware_share_one_page_store(
    settings, tmp_path
):
    """One store object (one S3 client and its connections) a crawl, not one a
    component."""
    crawler = get_crawler(BfsSpider, settings(PAGESTORE_URL=str(tmp_path / "pages")))
    pipeline = build_from_crawler(PageStorePipeline, crawler)
    middleware = build_from_crawler(ReparseMiddleware, crawler)
    assert middleware._store is pipeline._store
    other = get_crawler(BfsSpider, settings(PAGESTORE_URL=str(tmp_path / "pages")))
    assert build_from_crawler(PageStorePipeline, other)._store is not pipeline._store
