"""WARC revisit records: a revisit that brings nothing new (a 304, or a 200 with the
body last stored) is written as a ``revisit`` record, anything else as before. A
crawl fetches from a local server; the WARC is read back with warcio."""

from __future__ import annotations

import base64
import gzip
import hashlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from scrapy.http import Response

pytestmark = pytest.mark.integration

STORED = b"<html><body>the version the page store keeps</body></html>"
CHANGED = b"<html><body>a newer version</body></html>"
ETAG = '"v1"'
NOT_MODIFIED = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
GZIPPED = gzip.compress(STORED, mtime=0)  # one body: a gzip header carries its time


class Handler(BaseHTTPRequestHandler):
    """``/conditional``: 304 to a matching If-None-Match, else the stored version;
    ``/same``: the stored version; ``/changed``: another; ``/gzipped``: the stored
    version gzipped; ``/gone``: 404. Queries are ignored."""

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        if path == "/conditional" and self.headers.get("If-None-Match") == ETAG:
            self.send_response(304)
            self.send_header("ETag", ETAG)
            self.end_headers()
            return
        status, body, headers = {
            "/conditional": (200, STORED, {"ETag": ETAG}),
            "/same": (200, STORED, {"ETag": ETAG}),
            "/changed": (200, CHANGED, {}),
            "/gzipped": (200, GZIPPED, {"Content-Encoding": "gzip"}),
        }.get(path, (404, b"gone", {}))
        self.send_response(status)
        for name, value in {**headers, "Content-Type": "text/html"}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    """The server's root URL (loopback)."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_address[1]}"
    http.shutdown()
    http.server_close()
    thread.join()


class RevisitSpider(Spider):
    """Asks for each (url, revisit meta or None, headers) once."""

    name = "revisits"

    def __init__(self, fetches: list[tuple[str, Any, dict[str, str]]], **kwargs: Any):
        super().__init__(**kwargs)
        self.fetches = fetches

    async def start(self) -> AsyncIterator[Any]:
        for url, revisit, headers in self.fetches:
            meta = {} if revisit is None else {"frontier_revisit": revisit}
            yield Request(url, meta=meta, headers=headers, dont_filter=True)

    def parse(self, response: Response) -> None:
        pass


def stored_revisit() -> dict[str, Any]:
    """The meta of a revisit of a page whose stored body is STORED."""
    return {"hash": hashlib.sha256(STORED).hexdigest(), "due": 1_800_000_000.0}


def read_warc(directory: Path) -> list[Any]:
    """(type, WARC headers, HTTP headers, payload as stored) of every record, every
    digest checked by warcio."""
    (path,) = directory.iterdir()
    records = []
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            payload = record.raw_stream.read()
            records.append(
                (record.rec_type, record.rec_headers, record.http_headers, payload)
            )
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return records


@deferred_f_from_coro_f
async def test_revisits_that_bring_nothing_new_are_revisit_records(
    server, settings, tmp_path
):
    conditional = {"If-None-Match": ETAG}
    fetches = [
        (f"{server}/conditional", stored_revisit(), conditional),
        (f"{server}/same", stored_revisit(), {}),
        (f"{server}/changed", stored_revisit(), {}),
        (f"{server}/gzipped", stored_revisit(), {}),
        (f"{server}/gone", stored_revisit(), {}),
        (f"{server}/conditional?not-a-revisit", None, conditional),
        (f"{server}/same?first-visit", None, {}),
        (f"{server}/same?no-hash", {"due": 1.0}, {}),
    ]
    crawler = get_crawler(RevisitSpider, settings(WARC_URL=str(tmp_path)))
    await crawler.crawl_async(fetches=fetches)
    records = read_warc(tmp_path)
    assert records[0][0] == "warcinfo"
    by_url = {
        headers.get_header("WARC-Target-URI"): (kind, headers, http, payload)
        for kind, headers, http, payload in records[1:]
        if kind != "request"
    }
    assert (
        len(records) == 1 + 2 * len(fetches) == crawler.stats.get_value("warc/records")
    )

    kind, headers, http, payload = by_url[f"{server}/conditional"]
    assert (kind, headers.get_header("WARC-Profile")) == ("revisit", NOT_MODIFIED)
    assert headers.get_header("WARC-Refers-To-Target-URI") == f"{server}/conditional"
    assert http.get_statuscode() == "304"
    assert http.get_header("ETag") == ETAG
    assert payload == b""

    kind, headers, http, payload = by_url[f"{server}/same"]
    assert (kind, headers.get_header("WARC-Profile")) == ("revisit", IDENTICAL)
    assert headers.get_header("WARC-Refers-To-Target-URI") == f"{server}/same"
    sha1 = base64.b32encode(hashlib.sha1(STORED).digest()).decode()  # noqa: S324
    assert headers.get_header("WARC-Payload-Digest") == f"sha1:{sha1}"
    assert headers.get_header("WARC-Refers-To-Date") is None  # not known
    assert http.get_statuscode() == "200"
    assert http.get_header("Content-Length") == str(len(STORED))  # as received
    assert payload == b""

    served = {
        "/changed": ("200", CHANGED),
        "/gzipped": ("200", GZIPPED),
        "/gone": ("404", b"gone"),
        "/conditional?not-a-revisit": ("304", b""),
        "/same?first-visit": ("200", STORED),
        "/same?no-hash": ("200", STORED),
    }
    for path, (status, body) in served.items():
        kind, headers, http, payload = by_url[server + path]
        assert kind == "response", path
        assert headers.get_header("WARC-Profile") is None, path
        assert (http.get_statuscode(), payload) == (status, body), path
    # The digest of a response of the stored version is the revisit's.
    first_visit = by_url[f"{server}/same?first-visit"][1]
    assert first_visit.get_header("WARC-Payload-Digest") == f"sha1:{sha1}"


@deferred_f_from_coro_f
async def test_every_revisit_record_has_its_request_record(server, settings, tmp_path):
    fetches = [
        (f"{server}/conditional", stored_revisit(), {"If-None-Match": ETAG}),
        (f"{server}/same", stored_revisit(), {}),
    ]
    crawler = get_crawler(RevisitSpider, settings(WARC_URL=str(tmp_path)))
    await crawler.crawl_async(fetches=fetches)
    records = read_warc(tmp_path)[1:]
    revisits = {
        headers.get_header("WARC-Record-ID"): headers.get_header("WARC-Target-URI")
        for kind, headers, _, _ in records
        if kind == "revisit"
    }
    requests = [
        (headers, http) for kind, headers, http, _ in records if kind == "request"
    ]
    assert sorted(revisits.values()) == sorted(url for url, _, _ in fetches)
    assert len(requests) == 2
    for headers, http in requests:
        url = revisits[headers.get_header("WARC-Concurrent-To")]
        assert headers.get_header("WARC-Target-URI") == url
        if url.endswith("/conditional"):
            assert http.get_header("If-None-Match") == ETAG  # as sent
