"""RobotsMiddleware: RFC 9309 robots.txt, fetched once per origin for the whole cluster.

Wiring only: what a fetch means and how long it holds is ``crawler.policy.robotsfetch``.
An origin's rules come from this process's LRU (``robotscache``), else from the
cluster's record in Redis, else from a fetch one node makes for all
(``robotsrecords``, downloading with ``robotsdownload``). Rules are matched for
``ROBOTSTXT_USER_AGENT``, never the User-Agent header. The robots.txt fetch counts
as a fetch of its host: the request that waited for it goes out only after the
host's delay. The content signals the file states for a request's URL go on its
meta (``ROBOTS_SIGNALS``), for ``ContentSignalsMiddleware`` to record with the page.
Other components reach the middleware with Scrapy's
``crawler.get_downloader_middleware(RobotsMiddleware)``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.holds import ForbiddenByRobots, HoldRequest
from crawler.meta import DONT_OBEY_ROBOTSTXT, ROBOTS_FETCH, ROBOTS_SIGNALS
from crawler.policy.hosts import host_of
from crawler.policy.robotsfetch import RobotsConfig, RobotsRecord, origin_of, robots_url
from crawler.policy.robotsrules import RobotsRules, parse_rules
from crawler.robots.cache import RobotsEntry, RulesCache
from crawler.robots.download import RobotsDownloader
from crawler.robots.records import RobotsRecords

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Signal sent with host=, origin=, sitemaps= (URLs) and request= (the request that
# led to the fetch) when this node has fetched a robots.txt that lists sitemaps.
robots_sitemaps = object()


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, config: RobotsConfig, keys: CrawlKeys) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._cache = RulesCache()
        self._loading: dict[str, asyncio.Event] = {}
        downloader = RobotsDownloader(crawler, config)
        self._records = RobotsRecords(crawler, config, keys, downloader.fetch)
        self._once = OnceLogger(logger, crawler)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad setting, a stand-in that logs one line and
        closes the spider as soon as it opens (``scrapy crawl`` exits with 1)."""
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured  # switched off: no message (a message warns)
        assert crawler.spider is not None
        try:
            config = RobotsConfig.from_settings(crawler.settings)
            _ = CrawlContext.of(
                crawler
            ).delays  # Crawl-delays go there: settings must be good
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, CrawlKeys.of(crawler.settings, crawler.spider.name))

    def known_verdict(self, url: str) -> bool | None:
        """Whether robots.txt allows *url*, if this node holds its origin's rules
        now; None when it does not know (the download path decides then)."""
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        entry = self._cache.get(origin, time.time())
        if entry is None or entry.record.state == "deny":
            return None  # unknown, or unreachable: may be retried before it is due
        return entry.rules is None or entry.rules.allows(url)

    async def process_request(self, request: Request) -> None:
        """Let *request* go, raise ``ForbiddenByRobots`` (counted) if robots.txt forbids
        it, or ``HoldRequest`` until the next attempt if robots.txt is unreachable.
        A request let go carries the content signals robots.txt states for it."""
        request.meta.pop(ROBOTS_SIGNALS, None)  # another URL's, copied by a spider
        if request.meta.get(ROBOTS_FETCH) or request.meta.get(DONT_OBEY_ROBOTSTXT):
            return
        try:
            origin = origin_of(request.url)
        except ValueError:
            return  # not http(s): robots.txt does not apply
        entry, fetched = await self._entry(origin, request)
        if entry.record.state == "deny":
            self._hold_unreachable(entry, origin, request)
        if entry.rules is not None and not entry.rules.allows(request.url):
            self._stats.inc_value("robots/disallowed")
            logger.debug(
                "Forbidden by robots.txt: %(request)s",
                {"request": request},
                extra={"spider": self._crawler.spider},
            )
            raise ForbiddenByRobots("Forbidden by robots.txt")
        if entry.rules is not None and (
            signals := entry.rules.signals_for(request.url)
        ):
            request.meta[ROBOTS_SIGNALS] = [request.url, signals]
        if fetched:  # the site has just seen a request of this host: keep its delay
            delays = CrawlContext.of(self._crawler).delays
            await asyncio.sleep(delays.delay_for(host_of(origin), now=time.time()))

    async def _entry(self, origin: str, request: Request) -> tuple[RobotsEntry, bool]:
        """*origin*'s rules, and whether this call fetched them from the site. Requests
        of this node for one origin share one load."""
        if (entry := self._cache.get(origin, time.time())) is not None:
            return entry, False
        if (loading := self._loading.get(origin)) is not None:
            await loading.wait()  # another request of this node is loading them
            if (entry := self._cache.get(origin, time.time())) is not None:
                return entry, False
        done = self._loading[origin] = asyncio.Event()
        try:
            record, fetched = await self._records.load(origin)
            entry = self._install(origin, record, fetched=fetched, request=request)
        finally:
            if self._loading.get(origin) is done:
                del self._loading[origin]
            done.set()
        return entry, fetched

    def _install(
        self, origin: str, record: RobotsRecord, *, fetched: bool, request: Request
    ) -> RobotsEntry:
        """Parse *record*, tell the frontier its Crawl-delay, announce the sitemaps of
        a file this node fetched, and cache it."""
        rules = None
        if record.state == "rules":
            rules = self._parse(origin, record.body or "")
        if record.gave_up:
            self._stats.inc_value("robots/gave_up")
        delay = rules.crawl_delay if rules is not None else None
        host = host_of(origin)
        CrawlContext.of(self._crawler).delays.set_crawl_delay(host, delay)
        if delay:
            self._stats.inc_value("robots/crawl_delay_hosts")
        if rules is not None:
            self._count_signals(origin, rules)
        if fetched and rules is not None and rules.sitemaps:
            self._crawler.signals.send_catch_log(
                robots_sitemaps,
                host=host,
                origin=origin,
                sitemaps=list(rules.sitemaps),
                request=request,
            )
        entry = RobotsEntry(record, rules)
        self._cache.put(origin, entry)
        return entry

    def _count_signals(self, origin: str, rules: RobotsRules) -> None:
        """Count the content signal lines of *origin*'s file for our token, and
        their parts skipped (logged the first time)."""
        if rules.signals.lines:
            self._stats.inc_value("signals/robots_lines", rules.signals.lines)
        if rules.signals.skipped:
            self._once.event(
                "signals/skipped",
                "Skipped %(count)d unreadable content signal(s) in robots.txt of "
                "%(origin)s; further ones are only counted in signals/skipped",
                {"count": rules.signals.skipped, "origin": origin},
                count=rules.signals.skipped,
            )

    def _parse(self, origin: str, text: str) -> RobotsRules | None:
        rules = parse_rules(
            text, user_agent=self._config.user_agent, base_url=robots_url(origin)
        )
        if rules is None:
            self._stats.inc_value("robots/parse_errors")
            logger.warning(
                "robots.txt of %(origin)s cannot be parsed: no restrictions apply",
                {"origin": origin},
                extra={"spider": self._crawler.spider},
            )
        return rules

    def _hold_unreachable(
        self, entry: RobotsEntry, origin: str, request: Request
    ) -> NoReturn:
        """Hold *request* until the next robots.txt attempt: it is not lost, the
        frontier tries it again then (RFC 9309 2.3.1.4: meanwhile, nothing goes).
        Logged once per origin and record."""
        self._stats.inc_value("robots/unreachable")
        if not entry.warned:
            entry.warned = True
            status = entry.record.status
            reason = f"HTTP {status}" if status else "no answer"
            retry = datetime.fromtimestamp(entry.record.expires_at, UTC)
            logger.warning(
                "robots.txt of %(origin)s is unreachable (%(reason)s): its URLs are "
                "held until the next attempt at %(retry)s",
                {
                    "origin": origin,
                    "reason": reason,
                    "retry": retry.isoformat(timespec="seconds"),
                },
                extra={"spider": self._crawler.spider},
            )
        raise HoldRequest(
            f"robots.txt of {origin} is unreachable: {request.url}",
            until=entry.record.expires_at,
            fate="robots_unreachable",
        )

    async def _spider_closed(self) -> None:
        await self._records.close()
