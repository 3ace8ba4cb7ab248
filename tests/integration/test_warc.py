"""WARC output: crawls of the local site read back with warcio and checked by it."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from crawler.context.startup import StartupFailure
from crawler.middlewares.warc import WarcMiddleware
from crawler.spiders.bfs import BfsSpider
from tests.site import Site

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

# Small enough that the default site (about 120 pages of 2-5 KB) fills several files.
MAX_SIZE = 40_000
NAME = re.compile(r"^bfs-\d{14}-[A-Za-z0-9._-]+-\d+-(\d{5})\.warc\.gz$")


@dataclass
class WarcRecord:
    file: str
    offset: int
    type: str
    headers: dict[str, str]
    http: Any
    payload: bytes


def warc_settings(settings, directory: Path, **overrides: Any) -> dict[str, Any]:
    """The add-on installs the WARC middleware; WARC_URL switches it on."""
    return settings(WARC_URL=str(directory), **overrides)


def read_records(path: Path) -> tuple[list[WarcRecord], int]:
    """Every record of a file (digests checked, a failure raises) and the offset
    of its last request/response pair."""
    records = []
    with path.open("rb") as stream:
        iterator = ArchiveIterator(stream, check_digests="raise")
        for record in iterator:
            payload = record.raw_stream.read()  # as stored: not decoded
            records.append(
                WarcRecord(
                    path.name,
                    iterator.get_record_offset(),
                    record.rec_type,
                    dict(record.rec_headers.headers),
                    record.http_headers,
                    payload,
                )
            )
    return records, records[-2].offset


def warc_files(directory: Path) -> list[Path]:
    files = sorted(directory.iterdir(), key=lambda p: int(NAME.match(p.name)[1]))
    assert all(NAME.match(p.name) for p in files), [p.name for p in files]
    return files


@deferred_f_from_coro_f
async def test_every_download_is_a_request_and_a_response_record(
    site: RunningSite, settings, tmp_path
):
    directory = tmp_path / "warc"
    crawler = get_crawler(
        BfsSpider,
        warc_settings(settings, directory, WARC_MAX_SIZE=MAX_SIZE, ROBOTSTXT_OBEY=True),
    )
    await crawler.crawl_async(seeds=site.seeds[0])
    files = warc_files(directory)  # .open files were renamed: none is left
    assert len(files) >= 3
    records: list[WarcRecord] = []
    for path in files:
        found, last_pair = read_records(path)
        assert found[0].type == "warcinfo"
        assert found[0].headers["WARC-Filename"] == path.name
        assert [r.type for r in found[1:]] == ["response", "request"] * (
            (len(found) - 1) // 2
        )
        assert last_pair < MAX_SIZE  # the file was below the limit before its last pair
        if path != files[-1]:
            assert path.stat().st_size >= MAX_SIZE  # closed only once full
        records += found
    stats = crawler.stats.get_stats()
    assert stats["warc/files"] == len(files)
    assert stats["warc/records"] == len(records)
    assert "warc/errors" not in stats
    check_against_site(site, records)


def check_against_site(site: RunningSite, records: list[WarcRecord]) -> None:
    """One pair per fetch the site logged, robots.txt included, with what it served."""
    responses = [r for r in records if r.type == "response"]
    requests = [r for r in records if r.type == "request"]
    logged = Counter(f"http://{row['host']}{row['path']}" for row in site.log())
    assert sum(1 for row in site.log() if row["path"] == "/robots.txt") == 4
    assert Counter(r.headers["WARC-Target-URI"] for r in responses) == logged
    assert Counter(r.headers["WARC-Target-URI"] for r in requests) == logged
    server = Site(site.spec, 2000, 5000, None)  # the running site's defaults
    hosts = {site.host(i): i for i in range(site.spec.hosts)}
    for response in responses:
        url = response.headers["WARC-Target-URI"]
        host, _, path = url.removeprefix("http://").partition("/")
        served = server.route(hosts[host], "/" + path)
        assert response.http.get_statuscode() == str(served.status), url
        assert response.payload == served.body, url
        assert response.http.get_header("Content-Type") == served.content_type
        assert response.headers["WARC-IP-Address"] == host.partition(":")[0]
    ids = {r.headers["WARC-Record-ID"]: r for r in responses}
    for request in requests:
        response = ids[request.headers["WARC-Concurrent-To"]]
        url = request.headers["WARC-Target-URI"]
        assert response.headers["WARC-Target-URI"] == url
        assert response.file == request.file  # a pair never straddles two files
        assert request.http.protocol == "GET"
        assert request.http.statusline.endswith(" HTTP/1.1")
        target = request.http.statusline.split()[0]
        assert f"http://{request.http.get_header('Host')}{target}" == url
        assert request.http.get_header("User-Agent")
    assert len(ids) == len(responses)


@deferred_f_from_coro_f
async def test_warcio_check_accepts_every_file(site, settings, tmp_path):
    directory = tmp_path / "warc"
    crawler = get_crawler(
        BfsSpider, warc_settings(settings, directory, WARC_MAX_SIZE=MAX_SIZE)
    )
    await crawler.crawl_async(seeds=site.seeds[1])
    files = [str(p) for p in warc_files(directory)]
    records = crawler.stats.get_value("warc/records")
    check = warcio("check", "-v", *files)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("digest pass") == records  # warcinfo too (block)
    index = warcio("index", *files)
    assert index.returncode == 0, index.stderr
    assert len(index.stdout.splitlines()) == records


def warcio(*args: str) -> subprocess.CompletedProcess[str]:
    """warcio's own command line (``warcio check``, ``warcio index``)."""
    command = [sys.executable, "-m", "warcio.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@deferred_f_from_coro_f
async def test_a_warc_dir_unwritable_mid_crawl_is_counted_and_the_crawl_goes_on(
    site, settings, tmp_path, caplog
):
    directory = tmp_path / "warc"
    crawler = get_crawler(BfsSpider, warc_settings(settings, directory, DEPTH_LIMIT=1))

    def block() -> None:  # once the crawl has started: a file where it writes
        directory.write_text("a file where the WARC directory should be\n")

    crawler.signals.connect(block, signal=signals.spider_opened, weak=False)
    await crawler.crawl_async(seeds=site.seeds[0])
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["warc/errors"] == len(site.pages()) > 1
    assert "warc/records" not in stats
    assert caplog.text.count("Could not write WARC files") == 1


def test_no_warc_dir_means_no_middleware(settings):
    crawler = get_crawler(BfsSpider, settings(WARC_URL=""))
    with pytest.raises(NotConfigured):
        build_from_crawler(WarcMiddleware, crawler)


def test_an_unwritable_warc_dir_fails_at_start_naming_the_setting(
    settings, tmp_path, caplog
):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the WARC directory should be\n")
    crawler = get_crawler(BfsSpider, warc_settings(settings, blocker / "warc"))
    assert isinstance(build_from_crawler(WarcMiddleware, crawler), StartupFailure)
    assert "WARC_URL" in caplog.text
    assert "is not writable" in caplog.text


def test_a_bad_max_size_fails_at_start_naming_the_setting(settings, tmp_path, caplog):
    crawler = get_crawler(BfsSpider, warc_settings(settings, tmp_path, WARC_MAX_SIZE=0))
    assert isinstance(build_from_crawler(WarcMiddleware, crawler), StartupFailure)
    assert "WARC_MAX_SIZE must be > 0 bytes, got 0" in caplog.text


def test_a_compressed_chunked_response_is_stored_raw(settings, tmp_path):
    """The middleware sits before HttpCompressionMiddleware: the body stays gzipped
    and its headers true; a Transfer-Encoding the client undid is renamed."""
    crawler = get_crawler(BfsSpider, warc_settings(settings, tmp_path, DEPTH_LIMIT=1))
    middleware = build_from_crawler(WarcMiddleware, crawler)
    page = b"<html>" + b"x" * 1000 + b"</html>"
    request = Request("http://example.test:8080/a?b=1", headers={"Accept": "*/*"})
    request.headers["Proxy-Authorization"] = "Basic c2VjcmV0"
    response = Response(
        request.url,
        body=gzip.compress(page),
        headers={"Content-Encoding": "gzip", "Transfer-Encoding": "chunked"},
        request=request,
    )
    middleware.process_request(request)
    assert middleware.process_response(request, response) is response
    middleware._spider_closed()  # what the spider_closed signal calls
    (path,) = warc_files(tmp_path)
    stored = {r.type: (r.http, r.payload) for r in read_records(path)[0]}
    with path.open("rb") as stream:
        (decoded,) = [
            r.content_stream().read()
            for r in ArchiveIterator(stream)
            if r.rec_type == "response"
        ]
    http, raw = stored["response"]
    assert raw == response.body
    assert decoded == page  # a reader that decodes gets the page
    assert http.get_header("Content-Encoding") == "gzip"
    assert http.get_header("Transfer-Encoding") is None
    assert http.get_header("X-Crawler-Transfer-Encoding") == "chunked"
    http, _ = stored["request"]
    assert (http.protocol, http.statusline) == ("GET", "/a?b=1 HTTP/1.1")
    assert http.get_header("Host") == "example.test:8080"
    assert http.get_header("Proxy-Authorization") is None
