"""Soft404Middleware: a host that answers 200 for pages that do not exist.

Before the first page of an origin goes out, the origin is asked once for a page
no site has (``crawler.policy.traps.soft_404_probe_url``, a random path). A host that
answers it with a 404 is honest, and nothing more is done. A host that answers 200
has shown its "not found" page: its signature (``soft_404_signature``: the page's
words without the echoed path, numbers and dates) is kept, and every later 200 page
of the origin with that signature is a soft 404, answered as the 404 it is
(``traps/soft_404``): recorded as an HTTP error, its links not followed. The probe's
answer is shared through Redis (``<prefix>:soft404:<origin>``, a day), so an origin
is probed about once for the cluster; a node that finds Redis away probes for itself.
The probe goes out under the page's lease, like its robots.txt, and the page then
waits its host's delay.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http.request import NO_CALLBACK

from crawler.context.asyncclient import LazyAsyncClient
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.meta import LEASE, is_page_fetch
from crawler.policy.hosts import host_of
from crawler.policy.robotsfetch import origin_of
from crawler.policy.traps import (
    TrapsConfig,
    matches_soft_404,
    soft_404_probe_url,
    soft_404_signature,
)
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Seconds an origin's probe answer is kept in Redis: sites rarely change how they
# answer a missing page.
SHARED_FOR = 86_400
# Origins whose answers this process keeps (the least recently used go first).
MEMORY = 10_000
PROBE_TIMEOUT = 30.0
NO_SIGNATURE = "-"  # the origin answers a missing page honestly (not with 200)


class Soft404Middleware:
    def __init__(self, crawler: Crawler) -> None:
        assert crawler.spider is not None
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._keys = CrawlKeys.of(crawler.settings, crawler.spider.name)
        self._signatures: OrderedDict[str, str] = OrderedDict()
        self._probing: dict[str, asyncio.Event] = {}
        self._redis = LazyAsyncClient(crawler)
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = TrapsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        if not config.soft_404:
            raise NotConfigured
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        """Probe the request's origin first if it has not been."""
        meta = request.meta
        if not is_page_fetch(meta):
            return
        try:
            origin = origin_of(request.url)
        except ValueError:
            return
        if self._known(origin) is not None:
            return
        if await self._probe(origin):
            delays = CrawlContext.of(self._crawler).delays
            await asyncio.sleep(delays.delay_for(host_of(origin), now=time.time()))

    def process_response(self, request: Request, response: Response) -> Response:
        """A 200 page that is the origin's "not found" page, as the 404 it is."""
        if response.status != 200 or LEASE not in request.meta:
            return response
        try:
            origin = origin_of(request.url)
        except ValueError:
            return response
        known = self._known(origin)
        if known in (None, NO_SIGNATURE):
            return response
        page = soft_404_signature(200, response.body, url=response.url)
        if not matches_soft_404(known, page):
            return response
        self._once.event(
            "traps/soft_404",
            "%(url)s is %(origin)s's page for a missing URL (a soft 404): recorded "
            "as a 404; further ones are counted in traps/soft_404",
            {"url": response.url, "origin": origin},
            level=logging.INFO,
        )
        self._crawler.signals.send_catch_log(
            trap_cut, url=response.url, rule="soft_404"
        )
        return response.replace(status=404)

    def _known(self, origin: str) -> str | None:
        signature = self._signatures.get(origin)
        if signature is not None:
            self._signatures.move_to_end(origin)
        return signature

    def _remember(self, origin: str, signature: str) -> None:
        self._signatures[origin] = signature
        if len(self._signatures) > MEMORY:
            self._signatures.popitem(last=False)

    async def _probe(self, origin: str) -> bool:
        """Learn *origin*'s "not found" page: from Redis, else by asking it (once a
        process at a time). Whether this call sent the probe."""
        if (probing := self._probing.get(origin)) is not None:
            await probing.wait()
            return False
        done = self._probing[origin] = asyncio.Event()
        try:
            if (shared := await self._shared(origin)) is not None:
                self._remember(origin, shared)
                return False
            signature = await self._ask(origin)
            self._remember(origin, signature)
            await self._share(origin, signature)
            return True
        finally:
            del self._probing[origin]
            done.set()

    async def _ask(self, origin: str) -> str:
        url = soft_404_probe_url(origin, secrets.token_hex(8))
        request = Request(
            url,
            callback=NO_CALLBACK,
            dont_filter=True,
            meta={
                "dont_retry": True,
                "dont_redirect": True,
                "handle_httpstatus_all": True,
                "download_timeout": PROBE_TIMEOUT,
            },
        )
        assert self._crawler.engine is not None
        try:
            response = await self._crawler.engine.download_async(request)
        except Exception:  # noqa: BLE001 (refused, timed out: no verdict, no harm)
            return NO_SIGNATURE
        self._stats.inc_value("traps/soft_404_probes")
        signature = soft_404_signature(response.status, response.body, url=url)
        return NO_SIGNATURE if signature is None else signature

    async def _shared(self, origin: str) -> str | None:
        try:
            found = await self._redis().get(self._keys.soft_404(origin))
        except REDIS_ERRORS:
            return None
        if found is None:
            return None
        text = found.decode("ascii", "replace") if isinstance(found, bytes) else ""
        return text if _plausible(text) else None

    async def _share(self, origin: str, signature: str) -> None:
        try:
            await self._redis().set(
                self._keys.soft_404(origin), signature, ex=SHARED_FOR
            )
        except REDIS_ERRORS:
            return


def _plausible(text: str) -> bool:
    """Whether a shared value is one this middleware wrote (never trusted else)."""
    return text == NO_SIGNATURE or (
        len(text) == 32 and all(c in "0123456789abcdef" for c in text)
    )
