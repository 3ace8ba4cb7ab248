"""BfsSpider: seeds in, links out. Order, politeness and limits belong to the frontier."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals

from crawler import defaults
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.seencache import SeenCache
from crawler.context.startup import StartupFailure
from crawler.items import EXPORTED, DepthRepair
from crawler.meta import FATE, LINK_CHECKED, LINKS_SIGNATURE, REPARSED, SITE_LINKS
from crawler.policy.duplicateurls import links_signature
from crawler.policy.scope import Scope
from crawler.robots.middleware import robots_sitemaps
from crawler.spiders.arguments import (
    PASSED_THROUGH,
    stand_down,
    unknown_arguments_message,
)
from crawler.spiders.credits import SpiderCredits
from crawler.spiders.follow import Follower, new_links
from crawler.spiders.pagerecords import (
    ERROR_WIDTH,
    NOT_MODIFIED,
    failure_record,
    fates_summary,
    page_record,
    redirect_records,
)
from crawler.spiders.seeds import read_seeds
from crawler.spiders.sitehistory import page_links
from crawler.spiders.sitemaps import NOT_A_SITEMAP, absolute_urls, read_sitemap

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from crawler.items import PageRecord


class BfsSpider(Spider):
    """Crawls breadth-first from ``-a seeds=URL,URL`` and/or ``-a seeds_file=PATH``.

    ``-a scope=any|seed-hosts|seed-domains`` limits which links are followed
    (default: the ``BFS_SCOPE`` setting). ``-a sitemaps=1`` also follows the sitemaps
    robots.txt files list: a sitemap gets the depth of the request that led to its
    robots.txt, and the URLs it lists are followed as links of it. Every URL it is
    handed gets one record (``PageRecord``) with its fate (crawler.policy.fates).
    A bad argument, or seeds of which none is valid, stops the crawl at start with
    one line (``scrapy crawl`` exits 1).
    """

    name = "bfs"
    # Depth repair may hand it a page again from the page store (its records say
    # reparsed pages apart); a spider without this attribute never gets one.
    reparses_from_page_store = True
    # The callback and errback of nearly every request it makes: the frontier's
    # queue entries leave them out (crawler.frontier.encoding.codec).
    frontier_callbacks = ("parse", "failed")
    # Every PageRecord field but the body (which the page store keeps), in this order,
    # in `-O pages.jsonl` and the like, in any project.
    custom_settings = {"FEED_EXPORT_FIELDS": list(EXPORTED)}  # noqa: RUF012 (Spider's type)

    def __init__(
        self,
        seeds: str = "",
        seeds_file: str = "",
        scope: str = "",
        sitemaps: str = "",
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - PASSED_THROUGH)
        super().__init__(**{k: v for k, v in kwargs.items() if k in PASSED_THROUGH})
        self._unknown_arguments = unknown
        self._seed_arg = seeds
        self._seeds_file = seeds_file
        self._scope_arg = scope
        self._follow_sitemaps = sitemaps.strip().lower() in ("1", "true", "yes")
        self._follower = Follower("pages")
        # Made before the crawler is known: counts are the callers' (stats, fates).
        self._once = OnceLogger(self.logger)
        self._seeds: list[str] = []
        # What this crawl is, for the frontier: a start with other seeds than the
        # crawl its keys hold is refused (crawler.frontier.node.identity).
        self.crawl_seeds: tuple[str, ...] = ()
        self.crawl_scope = ""
        self._bad_seeds = 0
        self._failure: StartupFailure | None = None
        self._recording: set[asyncio.Future[None]] = set()
        self._yielded = SeenCache(0)
        # FRONTIER_ORDER=importance: the credits of this spider's links.
        self._credits: SpiderCredits | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        try:
            spider._yielded = _seen_cache(crawler)
            spider._credits = SpiderCredits.of(crawler)
            spider._follower = Follower(
                crawler.settings.get("BFS_FOLLOW", defaults.BFS_FOLLOW)
            )
        except ValueError as exc:
            spider._failure = StartupFailure(crawler, f"Bad setting: {exc}")
            stand_down(crawler)
            return spider
        try:
            spider._seeds = spider._read_arguments()
        except ValueError as exc:
            # Kept: signals hold only a weak reference to its handler.
            spider._failure = StartupFailure(crawler, f"Bad spider argument: {exc}")
            stand_down(crawler)
            return spider
        if spider._follow_sitemaps:
            crawler.signals.connect(
                spider.follow_robots_sitemaps, signal=robots_sitemaps
            )
        crawler.signals.connect(spider._request_dropped, signal=signals.request_dropped)
        return spider

    def _read_arguments(self) -> list[str]:
        """The seeds; raises ``ValueError`` saying what is wrong with the arguments."""
        if self._unknown_arguments:
            raise ValueError(unknown_arguments_message(self._unknown_arguments))
        seeds = self._read_seeds()
        self.crawl_scope = self._scope_arg or self.settings.get("BFS_SCOPE") or ""
        self._scope = Scope(self.crawl_scope, seeds)
        self.crawl_seeds = tuple(seeds)
        if (self._seed_arg.strip() or self._seeds_file) and not seeds:
            raise ValueError("no valid seed: none given in -a seeds or seeds_file")
        return seeds

    async def start(self) -> AsyncIterator[Any]:
        if self._failure is not None:
            return
        if self._bad_seeds:
            self.crawler.stats.inc_value("bfs/bad_seeds", self._bad_seeds)
        if not self._seeds:
            self.logger.info("No seeds given: crawling what the frontier holds")
        if not self._follower.resources:
            self.logger.info(
                "Following links to pages (BFS_FOLLOW=pages): images, scripts, "
                "stylesheets, PDFs and archives are not fetched (links to them are "
                "counted in bfs/resources_not_followed); BFS_FOLLOW=resources "
                "fetches them"
            )
        for url in self._seeds:
            yield Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Iterator[Any]:
        """The page's record, then its links in scope when it is read for links
        (``BFS_FOLLOW``); a page whose links cannot be read is recorded
        ``unparseable``, never raised.

        Not a generator function itself: Scrapy reads the source of a generator
        callback for a ``return`` with a value, and its cache is keyed by the bound
        method, new with every request, so it would parse this source per page.
        """
        return self._outputs(response)

    def _outputs(self, response: Response) -> Iterator[Any]:
        yield from self._redirected(response.meta, response.url)
        try:
            # A 304 (a revisit of an unchanged page): the stored version stays, and
            # so do the links it had.
            found = (
                None
                if response.status == NOT_MODIFIED
                else self._follower.read(response)
            )
        except (ValueError, TypeError, AttributeError, UnicodeError) as exc:
            self._unparseable(response, exc)
            error = f"{type(exc).__name__}: {exc}"[:ERROR_WIDTH]
            yield self._page(
                response, page_record(response, 0, fate="unparseable", error=error)
            )
            return
        if found is None:  # links not read (BFS_FOLLOW): recorded only
            yield self._page(response, page_record(response, 0))
            return
        if found.skipped:
            self.crawler.stats.inc_value("bfs/resources_not_followed", found.skipped)
        depth = response.meta.get("depth", 0) + 1
        # Every link the page has, in scope or not, for its site's history.
        response.meta[SITE_LINKS] = page_links(response.url, found.links)
        response.meta[LINKS_SIGNATURE] = links_signature(response.url, found.links)
        known: list[str] | None = None if self._credits is None else []
        in_scope, new = new_links(found.links, depth, self._yielded, self._scope, known)
        yield self._page(response, page_record(response, in_scope, title=found.title))
        requests = [self._request(url) for url in new]
        if self._credits is not None and known is not None:
            self._credits.give(response, requests, known)
        yield from requests

    def links_not_followed(self, urls: list[str]) -> None:
        """Forget that *urls* were yielded: a middleware dropped them (the links of
        a copy, crawler.spiders.neardups), so another page's link to one is new."""
        for url in urls:
            self._yielded.discard(url)

    def _request(self, url: str) -> Request:
        """A link new_links found new, and added to the crawl's seen cache."""
        return Request(
            url, callback=self.parse, errback=self.failed, meta={LINK_CHECKED: True}
        )

    def failed(self, failure: Failure) -> Iterator[PageRecord]:
        """A request that failed for good (an HTTP error, a network error, a
        timeout on every tier, robots.txt...) gets its record, with its fate."""
        request = failure.request  # type: ignore[attr-defined]
        yield from self._redirected(request.meta, request.url)
        record = self._counted(failure_record(failure))
        request.meta[FATE] = record.fate  # the frontier counts it when it acks
        self.logger.debug(
            "%(url)s failed for good (%(fate)s): %(error)s",
            {"url": record.url, "fate": record.fate, "error": record.error},
        )
        yield record

    def _redirected(self, meta: Mapping[str, Any], url: str) -> Iterator[PageRecord]:
        for record in redirect_records(meta, url):
            yield self._counted(record)

    def _request_dropped(self, request: Request) -> None:
        """A redirect the frontier did not take (its target was seen already):
        the URLs that led there still get their ``redirected`` records."""
        if not request.meta.get("redirect_urls") or self.crawler.engine is None:
            return
        scraper = self.crawler.engine.scraper
        for record in redirect_records(request.meta, request.url):
            self._counted(record)
            task = asyncio.ensure_future(
                scraper.start_itemproc_async(record, response=None)
            )
            self._recording.add(task)  # kept until done: the loop holds tasks weakly
            task.add_done_callback(self._recording.discard)

    def _page(self, response: Response, record: PageRecord) -> PageRecord | DepthRepair:
        """The page's record, counted; for a page reparsed from the page store (depth
        repair), only its shorter depth: it was recorded, and fed, when fetched."""
        if response.meta.get(REPARSED):
            return DepthRepair(record.url, record.depth)
        return self._counted(record)

    def _counted(self, record: PageRecord) -> PageRecord:
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("bfs/records")
        stats.inc_value(f"bfs/fate_count/{record.fate}")
        return record

    def _unparseable(self, response: Response, error: Exception) -> None:
        self._once.once(
            "unparseable",
            "Could not read the links of %(url)s (%(error)s); recorded as "
            "unparseable, further ones are only counted in "
            "bfs/fate_count/unparseable",
            {"url": response.url, "error": error},
        )

    def closed(self, reason: str) -> None:
        """The end-of-crawl line: URLs recorded, and how many failed for good, why."""
        stats = self.crawler.stats
        assert stats is not None
        self.logger.info("%(summary)s", {"summary": fates_summary(stats.get_stats())})

    def follow_robots_sitemaps(self, sitemaps: Sequence[str], request: Request) -> None:
        """Queue the sitemaps a robots.txt lists, at the depth of *request*."""
        depth = request.meta.get("depth", 0)
        for url in sitemaps:
            if self._scope.allows(url):
                sitemap = Request(
                    url,
                    callback=self.parse_sitemap,
                    errback=self.failed,
                    meta={"depth": depth},
                )
                self.crawler.engine.crawl(sitemap)

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        """The sitemap's record, then its pages, or a sitemap index's sitemaps, in
        scope; a file that is not a sitemap is recorded ``unparseable``."""
        yield from self._redirected(response.meta, response.url)
        try:
            kind, entries = read_sitemap(
                response, self.settings.getint("DOWNLOAD_MAXSIZE")
            )
        except NOT_A_SITEMAP as exc:
            self._bad_sitemap(response, exc)
            error = f"not a sitemap: {exc}"[:ERROR_WIDTH]
            yield self._counted(
                page_record(response, 0, fate="unparseable", error=error)
            )
            return
        callback = self.parse if kind == "urlset" else self.parse_sitemap
        urls = [u for u in absolute_urls(response, entries) if self._scope.allows(u)]
        yield self._counted(page_record(response, len(urls)))
        for url in urls:
            yield Request(url, callback=callback, errback=self.failed)

    def _bad_sitemap(self, response: Response, error: Exception) -> None:
        self.crawler.stats.inc_value("bfs/bad_sitemaps")
        self._once.once(
            "bad_sitemap",
            "Skipped %s, not a sitemap (%s); further ones are only counted in "
            "bfs/bad_sitemaps",
            response.url,
            error,
        )

    def _read_seeds(self) -> list[str]:
        """The valid seeds (``read_seeds``); each bad one is logged now, and counted
        in ``bfs/bad_seeds`` once the crawl starts (read before Scrapy makes the
        crawler's stats)."""
        seeds, errors = read_seeds(self._seed_arg, self._seeds_file)
        for error in errors:
            self.logger.error("%(error)s; skipped", {"error": error})
        self._bad_seeds = len(errors)
        return seeds


def _seen_cache(crawler: Crawler) -> SeenCache:
    """The crawl's seen cache, shared with the frontier; a cache of the spider's
    own in a project without the add-on. A bad setting raises ``ValueError``."""
    context = crawler.get_addon(CrawlContext)
    if context is None:
        return SeenCache.from_settings(crawler.settings)
    return context.seen
