"""The add-on: one line turns any Scrapy project into a polite, breadth-first crawl.

``ADDONS = {"crawler.addon.Frontier": 0}`` (plus ``REDIS_URL``, or nothing for a
private Redis server) is all a project needs. ``update_settings`` installs the
frontier scheduler, our middlewares and pipelines, and every default of
``crawler.defaults`` at the ``addon`` priority, so whatever the project, ``-s`` or
scrapyd sets wins. A component mapped to ``None`` by the user stays off; the
scheduler refuses to start without the one it cannot run without (the lease
acknowledgement), saying so in one line.

The instance is the crawl's context (``crawler.context.crawl.CrawlContext``): the
state its components share. Components reach it with ``CrawlContext.of(crawler)``,
through Scrapy's own ``crawler.get_addon``; nothing imports this module.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from crawler.context.components import PAGE_STORE_PIPELINE
from crawler.context.crawl import CrawlContext
from crawler.context.quietlogs import quiet_logs
from crawler.context.settingscheck import warn_ignored_settings
from crawler.context.startup import StartupFailure
from crawler.defaults import install_defaults, install_pre_crawler_settings
from crawler.render import install as render

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings, Settings

logger = logging.getLogger(__name__)

SCHEDULER = "crawler.frontier.scheduler.FrontierScheduler"
# Ours, by setting: (class path, order). Comments say why each sits where it does.
COMPONENTS: dict[str, tuple[tuple[str, int], ...]] = {
    "SPIDER_MIDDLEWARES": (
        # Annotates depth and acknowledges each lease once its response is handled.
        ("crawler.frontier.acks.FrontierDepthMiddleware", 900),
        # FRONTIER_ORDER=importance: each link's share of its page's importance; a
        # page's links counted once robots.txt's filter (950) has dropped its own.
        ("crawler.frontier.importance.LinkCreditMiddleware", 920),
        # Each host's pages, links and depths (FRONTIER_SITE_STRATEGY's history), in
        # batches to Redis; next to the depth middleware, which gives pages depths.
        ("crawler.spiders.sitehistory.SiteHistoryMiddleware", 890),
        # Links robots.txt forbids (when their origin's rules are known) are not queued.
        ("crawler.robots.linkfilter.RobotsLinkFilter", 950),
        # Links written canonically and spider traps cut (a record each), before
        # robots.txt and the frontier see them: next to the spider.
        ("crawler.spiders.trapfilter.TrapFilterMiddleware", 960),
        # Each page's text against its host's other pages (a SimHash index in Redis):
        # its record says whether it is a near-duplicate.
        ("crawler.spiders.neardups.NearDuplicatesMiddleware", 970),
        # RENDER_MODE=auto: each sample's rendered page against its static document
        # (outcomes to the render advisor), held pages sent to be rendered; below
        # the depth middleware, so that a request it adds keeps its page's depth.
        ("crawler.render.sampler.RenderSampler", 850),
        # A page record for each response whose spider yields none (a project's own
        # spiders), and bfs's depth repairs, to the pipelines, never to feeds; below
        # Scrapy's HttpErrorMiddleware (50), so an HTTP error answer is recorded too.
        ("crawler.spiders.responserecords.ResponseRecordsMiddleware", 40),
    ),
    "DOWNLOADER_MIDDLEWARES": (
        # Next to the engine, after Scrapy's immediate retries: a failure that may
        # pass is held in the frontier and tried again later; a final one gets its fate.
        ("crawler.middlewares.retrylater.RetryLaterMiddleware", 2),
        # Depth repair: a page fetched too deep is answered from the page store, so its
        # links are followed again at their true depths without asking its host.
        ("crawler.middlewares.reparse.ReparseMiddleware", 50),
        # A queued URL that its host's learnt rules rewrite to a page already
        # fetched is not fetched (a trap); before the server gate, so it takes none.
        ("crawler.middlewares.knowncopies.KnownCopiesMiddleware", 55),
        # TRAPS_DEAD_DIRECTORY_PAGES: a directory whose pages were all missing is
        # not asked for more; before the server gate too, and after the soft-404
        # middleware (110) on the way back, so a soft 404 counts as missing.
        ("crawler.middlewares.deaddirs.DeadDirectoriesMiddleware", 56),
        # POLITENESS_KEY = ip | domain: one request in flight per server across the
        # cluster; before robots.txt, whose fetch goes out under the same gate.
        ("crawler.middlewares.servergate.ServerGateMiddleware", 60),
        # RFC 9309, Crawl-delay, one robots.txt fetch per origin across the cluster.
        ("crawler.robots.middleware.RobotsMiddleware", 100),
        # TRAPS_SOFT_404: each origin probed once with a page that cannot exist, its
        # "not found" pages answered with 200 then turned into the 404s they are;
        # after robots.txt (the probe obeys it), before the retry middlewares.
        ("crawler.middlewares.soft404.Soft404Middleware", 110),
        # Rotating User-Agent and Referer.
        ("crawler.middlewares.useragent.UserAgentMiddleware", 500),
        # Each page's content signals (robots.txt's, its headers') for its record:
        # below Scrapy's retry (550) and redirect (600) middlewares, so only the
        # answer a page is recorded with reaches it.
        ("crawler.middlewares.contentsignals.ContentSignalsMiddleware", 530),
        # Render or not (crawler/render): after robots.txt and the frontier's
        # decisions (only a request about to go out is rendered), and before the
        # timeouts (560), which give a rendered request its tier's render timeout;
        # the rendered response comes back through every middleware like any other.
        ("crawler.render.middleware.RenderMiddleware", 540),
        # Timeout tiers: a timeout goes back to the frontier one tier down, before
        # Scrapy's RetryMiddleware (550) sees it.
        ("crawler.middlewares.timeouts.TimeoutsMiddleware", 560),
        # Decompression whose DOWNLOAD_MAXSIZE refusal has a fate (too_large).
        ("crawler.middlewares.sizes.SizeLimitedCompressionMiddleware", 590),
        # Web Bot Auth (BOT_AUTH_KEY): signed last, after User-Agent (500), cookies
        # (700), proxy (750) and the HTTP cache (900), so the request signed is the
        # one sent; before traffic (950) and WARC (960), which then see it signed.
        ("crawler.middlewares.botauth.BotAuthMiddleware", 940),
        # Per-host traffic counters in Redis (`scrapy frontier hosts`).
        ("crawler.middlewares.traffic.TrafficMiddleware", 950),
        # WARC records (WARC_URL), nearest the downloader so bodies are still raw.
        ("crawler.middlewares.warc.WarcMiddleware", 960),
    ),
    "EXTENSIONS": (
        # The crawl's Redis and stats lent to the process' DNS resolver
        # (TWISTED_DNS_RESOLVER): answers shared by every node, honouring TTLs.
        ("crawler.dns.sharing.DnsSharing", 490),
        # Names of hosts this node is to fetch soon resolved before their fetch.
        ("crawler.dns.ahead.ResolveAhead", 495),
        # Moves due URLs from the URL library into the frontier (REVISIT_POLICY).
        ("crawler.revisit.feeder.RevisitFeeder", 500),
        # Prometheus metrics on METRICS_HOST:METRICS_PORT (off without a port).
        ("crawler.metrics.exporter.MetricsExporter", 510),
    ),
    # Page store, page records, then the analysis task that reads both.
    "ITEM_PIPELINES": (
        (PAGE_STORE_PIPELINE, 300),  # its path: whether pages are stored, for others
        ("crawler.pipelines.records.RecordsPipeline", 400),
        ("crawler.analysis.pipeline.AnalysisPipeline", 500),
    ),
}
# Scrapy's built-ins that ours replace: both on would act twice.
REPLACED: dict[str, tuple[str, ...]] = {
    "SPIDER_MIDDLEWARES": (
        # Drops deep links silently; the frontier enforces DEPTH_LIMIT and counts.
        "scrapy.spidermiddlewares.depth.DepthMiddleware",
    ),
    "DOWNLOADER_MIDDLEWARES": (
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware",
        "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware",
        "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware",
    ),
}
ADDON_PRIORITY = SETTINGS_PRIORITIES["addon"]


class Frontier(CrawlContext):
    """The Scrapy add-on; its instance is the crawl's context (``CrawlContext``)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Frontier:
        return cls(crawler)

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        """The ``bfs`` spider, and every default, before any spider is built (Scrapy
        builds spiders before it runs ``update_settings``) and for our commands
        (``crawler.commands.crawltarget`` applies the same defaults)."""
        install_pre_crawler_settings(settings)

    def update_settings(self, settings: Settings) -> None:
        install_defaults(settings)  # again: a crawler may be made without a runner
        self._quiet_logs(settings)
        if not _install_scheduler(settings):
            return  # another scheduler: our components would wait on leases forever
        warn_ignored_settings(settings)  # scrapy-redis' too: its scheduler is not on
        for name, components in COMPONENTS.items():
            if name == "ITEM_PIPELINES" and _set_empty(settings, name):
                continue  # -s ITEM_PIPELINES={}: no pipelines, ours neither
            for path, order in components:
                settings.setdefault_in_component_priority_dict(
                    name, load_object(path), order
                )
        for name, paths in REPLACED.items():
            for path in paths:
                settings.set_in_component_priority_dict(name, load_object(path), None)
        _move_download_delay(settings)
        render.install(self._crawler, settings, ADDON_PRIORITY)

    def _quiet_logs(self, settings: Settings) -> None:
        """Scrapy's start-up listings at DEBUG, libraries' DEBUG lines off
        (crawler/context/quietlogs.py); a bad QUIET_LIBRARIES stops the crawl."""
        try:
            quiet_logs(settings)
        except ValueError as exc:
            StartupFailure(self._crawler, f"Bad setting: {exc}")


def _set_empty(settings: BaseSettings, name: str) -> bool:
    """Whether *name* was set, above Scrapy's default, to an empty dict."""
    priority = settings.getpriority(name)
    explicit = priority is not None and priority > SETTINGS_PRIORITIES["default"]
    return explicit and not settings.getdict(name)


def _install_scheduler(settings: Settings) -> bool:
    """The frontier is the scheduler, unless the project chose another (warned, and
    False is returned)."""
    priority = settings.getpriority("SCHEDULER") or 0
    chosen = ADDON_PRIORITY < priority <= SETTINGS_PRIORITIES["cmdline"]
    if chosen and settings.get("SCHEDULER") != SCHEDULER:
        logger.warning(
            "SCHEDULER is set to %(current)s: the frontier's scheduler is not "
            "used (remove SCHEDULER to crawl with it)",
            {"current": settings.get("SCHEDULER")},
        )
    settings.set("SCHEDULER", SCHEDULER, priority="addon")
    return bool(settings.get("SCHEDULER") == SCHEDULER)


def _move_download_delay(settings: Settings) -> None:
    """``DOWNLOAD_DELAY`` becomes ``POLITENESS_MIN_DELAY``, and Scrapy's is 0.

    The frontier spaces each host's requests itself; the downloader's own delay
    would make every host wait twice. A ``POLITENESS_MIN_DELAY`` set with a higher
    priority than ``DOWNLOAD_DELAY`` wins.
    """
    priority = settings.getpriority("DOWNLOAD_DELAY") or 0
    if priority > ADDON_PRIORITY and priority >= (
        settings.getpriority("POLITENESS_MIN_DELAY") or 0
    ):
        settings.set("POLITENESS_MIN_DELAY", settings["DOWNLOAD_DELAY"], priority)
    settings.set("DOWNLOAD_DELAY", 0.0, priority=max(priority, ADDON_PRIORITY))
