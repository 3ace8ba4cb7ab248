"""DnsSharing: lends the process' resolver this crawl's Redis and stats.

The resolver (``crawler.dns.resolver.CrawlResolver``) is built once a process by
Scrapy's crawler process, before any crawl's state exists, from the process'
settings. This extension, one a crawl, checks the crawl's DNS settings at start
(a bad one stops the crawl in one line, exit status 1) and, while the spider
runs, has the resolver share its answers through the crawl's Redis and count in
its stats. With another ``TWISTED_DNS_RESOLVER`` it says so once and does nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.crawlstate.keys import CrawlKeys
from crawler.dns.cache import SharedAnswers
from crawler.dns.resolver import CrawlDns, CrawlResolver, installed_resolver
from crawler.policy.dnsanswers import DnsConfig

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class DnsSharing:
    """Shares the crawl's DNS answers through Redis while its spider runs."""

    def __init__(self, crawler: Crawler, config: DnsConfig) -> None:
        self._crawler = crawler
        self._config = config
        self._lent: tuple[CrawlResolver, CrawlDns] | None = None
        self._closed = False
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        try:
            config = DnsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            StartupFailure(crawler, f"Bad setting: {exc}")
            raise NotConfigured from None  # said once, by StartupFailure
        return cls(crawler, config)

    def _spider_opened(self) -> None:
        """Lend once the reactor runs: Scrapy's crawler process installs the
        resolver as it starts the reactor, which may be after the spider opened."""
        if failed_at_startup(self._crawler):
            return
        from twisted.internet import reactor  # noqa: PLC0415 (the installed one)

        reactor.callWhenRunning(self._lend)

    def _lend(self) -> None:
        if self._closed:
            return
        resolver = installed_resolver()
        if not isinstance(resolver, CrawlResolver):
            logger.info(
                "DNS answers are not shared between nodes: the reactor's resolver "
                "is %(resolver)s (TWISTED_DNS_RESOLVER=%(setting)s)",
                {
                    "resolver": type(resolver).__name__,
                    "setting": self._crawler.settings.get("TWISTED_DNS_RESOLVER"),
                },
                extra={"spider": self._crawler.spider},
            )
            return
        assert self._crawler.stats is not None
        crawl = CrawlDns(self._crawler.stats, self._shared_answers())
        resolver.serve(crawl)
        self._lent = resolver, crawl

    async def _spider_closed(self) -> None:
        self._closed = True
        if self._lent is None:
            return
        resolver, crawl = self._lent
        self._lent = None
        resolver.leave(crawl)
        await crawl.shared.close()

    def _shared_answers(self) -> SharedAnswers:
        spider = self._crawler.spider
        keys = CrawlKeys.of(self._crawler.settings, spider.name if spider else "")
        context = CrawlContext.of(self._crawler)
        return SharedAnswers(
            lambda: context.redis.async_client(),  # noqa: PLW0108 (.redis on first use)
            keys,
            context.outage.gate("the DNS cache"),
            OnceLogger(logger, self._crawler),
            self._config.timeout,
        )
