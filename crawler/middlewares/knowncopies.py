"""KnownCopiesMiddleware: a queued URL that its host's learnt rules rewrite to a page
already fetched is not fetched.

``NearDuplicatesMiddleware`` (crawler/spiders/neardups.py) rewrites a host's new
links once a rule is learnt, but in breadth-first order a whole depth of links is
queued before the pages that teach the rule are fetched: facets, print copies. Here,
as each request is about to go out, the host's rules (``crawler.crawlstate.urlrules``)
are applied to its URL; when they change it and the page they lead to is in the
host's near-duplicate index (fetched), the request ends with fate ``trap`` (its
error ``KnownCopy: copy of <url>``, ``traps/known_copy``, and one of its host's
``traps``) and costs no fetch. A rewritten page not yet fetched lets the request
through: a rule never loses a page. Seeds go out as given. Without Redis, or with
``NEARDUP_RULE_SUPPORT`` 0, every request goes out.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from crawler.context.asyncclient import LazyAsyncClient
from crawler.context.crawl import CrawlContext
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.duplicateurls import rewrite, url_key
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.simhash import NearDupConfig
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Self, TypeVar

    from scrapy import Request
    from scrapy.crawler import Crawler

    T = TypeVar("T")


class KnownCopy(IgnoreRequest):
    """The request's URL is another spelling of a page already fetched."""


class KnownCopiesMiddleware:
    def __init__(self, crawler: Crawler, config: NearDupConfig) -> None:
        assert crawler.spider is not None
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._enabled = config.enabled and config.rule_support > 0
        self._keys = CrawlKeys.of(crawler.settings, crawler.spider.name)
        self._redis = LazyAsyncClient(crawler)
        self._rules = CrawlContext.of(crawler).url_rules
        self._gate = CrawlContext.of(crawler).outage.gate("near-duplicates")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = NearDupConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config)

    async def process_request(self, request: Request) -> None:
        if not self._enabled or not request.meta.get("depth"):
            return
        try:
            host = host_of(request.url)
        except BadURLError:
            return
        if not self._gate.ready(time.time()):
            return
        rules = self._rules.cached(host)
        if rules is None:
            rules = await self._asked(lambda: self._rules.of(host))
        original = rewrite(request.url, rules or frozenset())
        if original == request.url:
            return
        urls = self._keys.near_duplicate_urls(host)
        fetched = await self._asked(
            lambda: self._redis().hexists(urls, url_key(original))
        )
        if not fetched:
            return
        self._stats.inc_value("traps/known_copy")
        self._crawler.signals.send_catch_log(
            trap_cut, url=request.url, rule="known_copy"
        )
        raise KnownCopy(f"copy of {original}")

    async def _asked(self, call: Callable[[], Awaitable[T]]) -> T | None:
        """*call*'s answer from Redis, or None if Redis failed (counted; an outage
        reported through the crawl's gate)."""
        try:
            answer = await self._redis.fresh(call)
        except REDIS_ERRORS as exc:
            if is_outage(exc):
                self._gate.failed(exc, time.time())
            self._stats.inc_value("neardup/errors")
            return None
        self._gate.succeeded()
        return answer
