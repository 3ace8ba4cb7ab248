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

import asyncio
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.responsetypes import responsetypes
from scrapy.utils.asyncio import sleep

from crawler.context.components import page_store_on
from crawler.context.enginehooks import requests_in_progress
from crawler.meta import REPARSE, REPARSED, REQUEUED
from crawler.policy.storepath import store_path
from crawler.storage.stores import page_store_of

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any, Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from crawler.storage.stores import ObjectStore


# Seconds between two looks at whether a page's first fetch is through.
FIRST_FETCH_POLL = 0.05


class ReparseMiddleware:
    def __init__(self, crawler: Crawler, store: ObjectStore) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._store = store

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not page_store_on(crawler.settings):
            raise NotConfigured  # no page store: nothing to answer from, no warning
        try:
            store = page_store_of(crawler)  # the pipeline's: one client, not two
        except ValueError:
            raise NotConfigured from None  # the page store's pipeline says why
        return cls(crawler, store)

    def process_request(
        self, request: Request
    ) -> Coroutine[Any, Any, Request | Response] | None:
        if not request.meta.get(REPARSE):
            return None
        return self._reparsed(request)

    async def _reparsed(self, request: Request) -> Request | Response:
        """The stored page; if the page's first fetch is still in the engine, what
        is stored once the engine is through with it (unless it failed)."""
        body = await self._stored(request.url)
        if body is None and self._first_fetch_in_progress(request):
            self._stats.inc_value("reparse/waited_for_first_fetch")
            while self._first_fetch_in_progress(request):
                await sleep(FIRST_FETCH_POLL)
            body = await self._stored(request.url)
        return self._answer(request, body)

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

    async def _stored(self, url: str) -> bytes | None:
        """The stored body of *url*, if the page store holds one (and answers)."""
        try:
            key = store_path(url).as_posix()
            return await asyncio.to_thread(self._store.get, key)
        except (ValueError, OSError):  # no key, absent, unsafe, store unreachable
            return None
