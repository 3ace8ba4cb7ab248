"""ReparseMiddleware: a page fetched too deep is answered from the page store.

Depth repair (crawler/frontier/scripts.py) queues a page again when a shorter path
to it turns up after it was fetched, so that its links are followed at their true
depths. Its body is already in the page store: answering from there costs the host
nothing (no request, no politeness delay), so the frontier hands such pages out with
no host's delay to wait for. Without a stored copy, the page goes back to the
frontier under its own host, to be fetched again politely.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.responsetypes import responsetypes

from crawler.meta import REPARSE, REPARSED, REQUEUED
from crawler.policy.storepath import store_path

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class ReparseMiddleware:
    def __init__(self, crawler: Crawler, root: Path) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._root = root.resolve()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        directory = crawler.settings.get("PAGESTORE_DIR") or ""
        if not directory:
            raise NotConfigured("PAGESTORE_DIR is empty: pages are fetched again")
        return cls(crawler, Path(directory))

    def process_request(self, request: Request) -> Request | Response | None:
        if not request.meta.get(REPARSE):
            return None
        body = self._stored(request.url)
        if body is None:
            self._stats.inc_value("reparse/fetched")
            meta = {k: v for k, v in request.meta.items() if k != REPARSE}
            requeued = meta.get(REQUEUED, 0)
            meta[REQUEUED] = (requeued if isinstance(requeued, int) else 0) + 1
            return request.replace(dont_filter=True, meta=meta)
        self._stats.inc_value("reparse/from_store")
        request.meta[REPARSED] = True
        response_class = responsetypes.from_args(url=request.url, body=body)
        return response_class(
            url=request.url, body=body, request=request, flags=["reparse"]
        )

    def _stored(self, url: str) -> bytes | None:
        """The stored body of *url*, if the page store holds one (inside its root)."""
        try:
            path = (self._root / store_path(url)).resolve()
        except ValueError:
            return None
        if not path.is_relative_to(self._root) or not path.is_file():
            return None
        try:
            return path.read_bytes()
        except OSError:
            return None
