"""The context of one crawl: the state its components share.

Each host's delays in force and crawl strategy, the Redis server and its clients,
whether Redis answers, and the timing of the frontier's round trips. The add-on
(``crawler.addon.Frontier``) is a ``CrawlContext``: Scrapy builds one add-on
instance a crawler, and components reach it with ``CrawlContext.of(crawler)``
(Scrapy's own ``crawler.get_addon``) without importing the add-on, which sits at
the top of the layers and imports them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

from crawler.context.hostdelays import HostDelays, machine_zone
from crawler.context.linkcredits import LinkCredits
from crawler.context.outage import RedisOutage
from crawler.context.roundtriptimes import RoundTripTimes
from crawler.context.runsettings import RunSettings, RunSettingsHolder
from crawler.context.seencache import SeenCache
from crawler.context.sitestrategies import SiteStrategies
from crawler.crawlstate.connection import CrawlRedis
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.urlrules import UrlRules
from crawler.policy.simhash import NearDupConfig
from crawler.policy.sitestrategy import SiteStrategyConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class AddonMissingError(ValueError):
    """A component of ours runs in a crawl that did not enable the add-on."""


class CrawlContext:
    """What one crawl's components share; each part is made on first use, so a
    crawl that never touches Redis never starts a private server."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._delays: HostDelays | None = None
        self._outage: RedisOutage | None = None
        self._redis: CrawlRedis | None = None
        self._sites: SiteStrategies | None = None
        self._url_rules: UrlRules | None = None
        self._seen: SeenCache | None = None
        # The frontier's script round trips, timed for the metrics endpoint.
        self.round_trip_times = RoundTripTimes()
        # In-links the spider did not yield again (importance order).
        self.link_credits = LinkCredits()

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        """The crawl's context; raises ``AddonMissingError`` (one line) without it."""
        found = crawler.get_addon(CrawlContext)
        if found is None:
            raise AddonMissingError(
                "the frontier runs through its add-on: set "
                'ADDONS = {"crawler.addon.Frontier": 0} (not SCHEDULER or the '
                "middlewares alone)"
            )
        return found

    @property
    def delays(self) -> HostDelays:
        """Each host's delay in force; raises ``ValueError`` on a bad setting."""
        if self._delays is None:
            run = RunSettings.from_settings(self._crawler.settings, machine_zone())
            self._delays = HostDelays(RunSettingsHolder(run), self._crawler.stats)
        return self._delays

    @property
    def sites(self) -> SiteStrategies:
        """Each host's crawl strategy and depth limit (``FRONTIER_SITE_STRATEGY``);
        raises ``ValueError`` on a bad setting."""
        if self._sites is None:
            config = SiteStrategyConfig.from_settings(self._crawler.settings)
            self._sites = SiteStrategies(config, self._crawler)
        return self._sites

    @property
    def seen(self) -> SeenCache:
        """The links this process sent to the frontier, one cache for the spider
        and the scheduler (``FRONTIER_LOCAL_SEEN_MB``); raises ``ValueError`` on a
        bad setting."""
        if self._seen is None:
            self._seen = SeenCache.from_settings(self._crawler.settings)
        return self._seen

    @property
    def redis(self) -> CrawlRedis:
        """The crawl's Redis server and its clients (the private server is started
        on first use, stopped with the engine); ``RedisSettingsError`` on bad
        settings, at every call."""
        if self._redis is None:
            self._redis = CrawlRedis.from_settings(self._crawler.settings)
            signal = signals.engine_stopped
            self._crawler.signals.connect(self._redis.close, signal=signal)
        return self._redis

    @property
    def outage(self) -> RedisOutage:
        """Whether the crawl's Redis answers, shared by every component."""
        if self._outage is None:
            assert self._crawler.stats is not None
            self._outage = RedisOutage(self._crawler.stats)
        return self._outage

    @property
    def url_rules(self) -> UrlRules:
        """Each host's URL rewrites learnt from near-duplicates: one cache for the
        component that learns them and those that apply them, so a rule learnt
        here applies at once; raises ``ValueError`` on a bad setting."""
        if self._url_rules is None:
            # Here: crawler.context.asyncclient imports this module.
            from crawler.context.asyncclient import LazyAsyncClient  # noqa: PLC0415

            settings = self._crawler.settings
            assert self._crawler.spider is not None
            self._url_rules = UrlRules(
                LazyAsyncClient(self._crawler),
                CrawlKeys.of(settings, self._crawler.spider.name),
                NearDupConfig.from_settings(settings).rule_support,
            )
        return self._url_rules
