"""ReparseMiddleware: a page fetched too deep is answered from the page store.

Depth repair (crawler/frontier/store/scripts.py) queues a page again when a shorter path
to it turns up after it was fetched, so that its links are followed at their true
depths. Its body is already in the page store: answering from there costs the host
nothing (no request, no politeness delay), so the frontier hands such pages out with
no host's delay to wait for. Without a stored copy, the page goes back to the
frontier under its own host, to be fetched again politely.

The shorter path may turn up while the page's first fetch is still in progress on
this node (the frontier marks a page fetched when it hands it out): its body is not
stored yet, but will be once the engine is through with that request (the store
writes before the request is released). So the reparse waits for it rather than
fetching the page a second time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.responsetypes import responsetypes
from scrapy.utils.asyncio import sleep

from crawler.context.components import page_store_on
from crawler.context.enginehooks import requests_in_progress
from crawler.meta import REPARSE, REPARSED, REQUEUED
from crawler.policy.storepath import store_path

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any, Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


# Seconds between two looks at whether a page's first fetch is through.
FIRST_FETCH_POLL = 0.05


class ReparseMiddleware:
    def __init__(self, crawler: Crawler, root: Path) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._root = root.resolve()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not page_store_on(crawler.settings):
            raise NotConfigured  # no page store: nothing to answer from, no warning
        return cls(crawler, Path(crawler.settings["PAGESTORE_DIR"]))

    def process_request(
        self, request: Request
    ) -> Request | Response | Coroutine[Any, Any, Request | Response] | None:
        if not request.meta.get(REPARSE):
            return None
        body = self._stored(request.url)
        if body is None and self._first_fetch_in_progress(request):
            return self._answer_after_first_fetch(request)
        return self._answer(request, body)

    async def _answer_after_first_fetch(self, request: Request) -> Request | Response:
        """Wait till the engine is through with the page's first fetch (stored by
        then, unless it failed), then answer from the store."""
        self._stats.inc_value("reparse/waited_for_first_fetch")
        while self._first_fetch_in_progress(request):
            await sleep(FIRST_FETCH_POLL)
        return self._answer(request, self._stored(request.url))

    def _first_fetch_in_progress(self, request: Request) -> bool:
        """Whether the engine still holds another request for the page's URL."""
        in_progress = requests_in_progress(self._crawler) or ()
        return any(
            other is not request
            and other.url == request.url
            and not other.meta.get(REPARSE)
            for other in in_progress
        )

    def _answer(self, request: Request, body: bytes | None) -> Request | Response:
        """The stored page as the response, or the request to fetch it again."""
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
