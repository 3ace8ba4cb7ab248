"""ResolveAhead: names of hosts about to be fetched are resolved before they are.

A fetch whose name is not known yet waits for DNS (tens of milliseconds on the Web,
seconds from a slow server) while it holds a download slot. Once a second this
extension asks the frontier which hosts this node may be handed within
``DNS_RESOLVE_AHEAD`` seconds (its best ready hosts, and those whose delay ends by
then: ``FrontierScheduler.hosts_due``) and resolves those this process does not
know, through the crawl's resolver, so their answers are in memory and in the
crawl's Redis when the fetch asks. At most ``DNS_CONCURRENCY`` names are looked at
a round; the resolver bounds the lookups themselves. Counted in
``dns/resolved_ahead``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler.context.enginehooks import engine_scheduler
from crawler.context.startup import failed_at_startup
from crawler.dns.resolver import CrawlResolver, installed_resolver
from crawler.policy.dnsanswers import DnsConfig

if TYPE_CHECKING:
    from typing import Any, Self

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)

INTERVAL = 1.0  # seconds between two rounds


class ResolveAhead:
    """Resolves the names of the hosts this node is to fetch soon."""

    def __init__(self, crawler: Crawler, config: DnsConfig) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._within = config.resolve_ahead
        self._limit = config.concurrency
        self._timer: AsyncioLoopingCall | LoopingCall | None = None
        self._round: asyncio.Future[Any] | None = None
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        try:
            config = DnsConfig.from_settings(crawler.settings)
        except ValueError:
            raise NotConfigured from None  # DnsSharing stops the crawl in one line
        if not config.resolve_ahead:
            raise NotConfigured
        return cls(crawler, config)

    def _spider_opened(self) -> None:
        if failed_at_startup(self._crawler):
            return
        self._timer = create_looping_call(self._tick)
        self._timer.start(INTERVAL, now=False)

    def _spider_closed(self) -> None:
        if self._timer is not None and self._timer.running:
            self._timer.stop()
        self._timer = None
        if self._round is not None:
            self._round.cancel()

    def _tick(self) -> None:
        """Start a round unless the last one is still resolving."""
        if self._round is not None and not self._round.done():
            return
        resolver = installed_resolver()
        hosts_due = getattr(engine_scheduler(self._crawler), "hosts_due", None)
        if not isinstance(resolver, CrawlResolver) or hosts_due is None:
            return  # another resolver, or not our frontier: nothing to share
        hosts = hosts_due(self._within, self._limit)
        if hosts:
            self._round = asyncio.ensure_future(self._resolve(resolver, hosts))

    async def _resolve(self, resolver: CrawlResolver, hosts: list[str]) -> None:
        looked = await asyncio.gather(*(resolver.ahead(host) for host in hosts))
        if resolved := sum(looked):
            self._stats.inc_value("dns/resolved_ahead", resolved)
