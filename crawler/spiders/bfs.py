"""BfsSpider: seeds in, links out. Order, politeness and limits belong to the frontier."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from crawler import defaults
from crawler.context.startup import StartupFailure
from crawler.frontier.seencache import SeenCache
from crawler.items import EXPORTED
from crawler.meta import FATE
from crawler.policy.scope import Scope, parse_seed
from crawler.policy.typedsettings import get_optional_int
from crawler.robots.middleware import robots_sitemaps
from crawler.spiders.arguments import (
    PASSED_THROUGH,
    stand_down,
    unknown_arguments_message,
)
from crawler.spiders.follow import Follower
from crawler.spiders.pagerecords import (
    ERROR_WIDTH,
    NOT_MODIFIED,
    failure_record,
    fates_summary,
    page_record,
    redirect_records,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
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
        self._bad_sitemap_logged = False
        self._unparseable_logged = False
        self._seeds: list[str] = []
        self._failure: StartupFailure | None = None
        self._recording: set[asyncio.Future[None]] = set()
        self._yielded = SeenCache(0)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        try:
            spider._yielded = SeenCache(_seen_cache_size(crawler.settings))
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
        self._scope = Scope(self._scope_arg or self.settings.get("BFS_SCOPE"), seeds)
        if (self._seed_arg.strip() or self._seeds_file) and not seeds:
            raise ValueError("no valid seed: none given in -a seeds or seeds_file")
        return seeds

    async def start(self) -> AsyncIterator[Any]:
        if self._failure is not None:
            return
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
            yield self._counted(
                page_record(response, 0, fate="unparseable", error=error)
            )
            return
        if found is None:  # links not read (BFS_FOLLOW): recorded only
            yield self._counted(page_record(response, 0))
            return
        if found.skipped:
            self.crawler.stats.inc_value("bfs/resources_not_followed", found.skipped)
        depth = response.meta.get("depth", 0) + 1
        in_scope, new = self._new_links(found.links, depth)
        yield self._counted(page_record(response, in_scope, title=found.title))
        for url in new:
            yield Request(url, callback=self.parse, errback=self.failed)

    def _new_links(self, urls: Sequence[str], depth: int) -> tuple[int, list[str]]:
        """How many of *urls* are in scope, and those not yielded before at
        *depth* or shallower (the frontier still decides for each one yielded).

        A page links to ~100 URLs, nearly all yielded before: a dict lookup
        instead of a request through the middlewares to the frontier's seen
        check. Only URLs in scope are remembered, so a known one needs no scope
        check.
        """
        in_scope, new = 0, []
        for url in urls:
            known = self._yielded.depth_of(url)
            if known is None and not self._scope.allows(url):
                continue
            in_scope += 1
            if known is None or known > depth:
                self._yielded.add(url, depth)
                new.append(url)
        return in_scope, new

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

    def _counted(self, record: PageRecord) -> PageRecord:
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("bfs/records")
        stats.inc_value(f"bfs/fate_count/{record.fate}")
        return record

    def _unparseable(self, response: Response, error: Exception) -> None:
        if not self._unparseable_logged:
            self._unparseable_logged = True
            self.logger.warning(
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
            sitemap = Sitemap(self._sitemap_body(response))
            entries = [entry["loc"] for entry in sitemap]
            if sitemap.type not in ("urlset", "sitemapindex"):
                raise ValueError(f"root element {sitemap.type!r}")
        except (SyntaxError, ValueError, OSError, EOFError, StopIteration) as exc:
            self._bad_sitemap(response, exc)  # XMLSyntaxError is a SyntaxError
            error = f"not a sitemap: {exc}"[:ERROR_WIDTH]
            yield self._counted(
                page_record(response, 0, fate="unparseable", error=error)
            )
            return
        callback = self.parse if sitemap.type == "urlset" else self.parse_sitemap
        urls = []
        for loc in entries:
            try:
                url = response.urljoin(loc)
            except ValueError:  # e.g. an unbalanced "[" in the host
                continue
            if url.startswith(("http://", "https://")) and self._scope.allows(url):
                urls.append(url)
        yield self._counted(page_record(response, len(urls)))
        for url in urls:
            yield Request(url, callback=callback, errback=self.failed)

    def _sitemap_body(self, response: Response) -> bytes:
        if not gzip_magic_number(response):
            return response.body
        return gunzip(response.body, max_size=self.settings.getint("DOWNLOAD_MAXSIZE"))

    def _bad_sitemap(self, response: Response, error: Exception) -> None:
        self.crawler.stats.inc_value("bfs/bad_sitemaps")
        if not self._bad_sitemap_logged:
            self._bad_sitemap_logged = True
            self.logger.warning(
                "Skipped %s, not a sitemap (%s); further ones are only counted in "
                "bfs/bad_sitemaps",
                response.url,
                error,
            )

    def _read_seeds(self) -> list[str]:
        """The valid seeds; each bad one is logged and counted, unless none is
        valid: then ``ValueError`` says so, in one line with the first error."""
        lines = [("-a seeds", 0, url) for url in self._seed_arg.split(",")]
        if self._seeds_file:
            lines += [
                (self._seeds_file, number, line)
                for number, line in enumerate(self._seed_file_lines(), start=1)
            ]
        seeds, errors = [], []
        for source, number, line in lines:
            try:
                url = parse_seed(line)
            except ValueError as exc:
                errors.append(
                    f"{source} line {number}: {exc}" if number else f"{source}: {exc}"
                )
                continue
            if url:
                seeds.append(url)
        if errors and not seeds:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise ValueError(f"no valid seed: {errors[0]}{more}")
        for error in errors:
            self.logger.error("%(error)s; skipped", {"error": error})
            self.crawler.stats.inc_value("bfs/bad_seeds")
        return seeds

    def _seed_file_lines(self) -> list[str]:
        try:
            text = Path(self._seeds_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"cannot read seeds_file {self._seeds_file}: {exc}"
            ) from None
        return text.splitlines()


def _seen_cache_size(settings: BaseSettings) -> int:
    """FRONTIER_LOCAL_SEEN_CACHE, the project default when unset (a project without
    the add-on); a bad value is named, as the frontier's own read names it."""
    size = get_optional_int(settings, "FRONTIER_LOCAL_SEEN_CACHE", at_least=0)
    return defaults.FRONTIER_LOCAL_SEEN_CACHE if size is None else size
