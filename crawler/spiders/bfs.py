"""BfsSpider: seeds in, links out. Order, politeness and limits belong to the frontier."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from crawler.frontier.leases import NODE_META_KEY
from crawler.items import PageRecord
from crawler.middlewares.robots import robots_sitemaps
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.scope import Scope, parse_seed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure


class BfsSpider(Spider):
    """Crawls breadth-first from ``-a seeds=URL,URL`` and/or ``-a seeds_file=PATH``.

    ``-a scope=any|seed-hosts|seed-domains`` limits which links are followed
    (default: the ``BFS_SCOPE`` setting). ``-a sitemaps=1`` also follows the sitemaps
    robots.txt files list: a sitemap gets the depth of the request that led to its
    robots.txt, and the URLs it lists are followed as links of it.
    """

    name = "bfs"

    def __init__(
        self,
        seeds: str = "",
        seeds_file: str = "",
        scope: str = "",
        sitemaps: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._seed_arg = seeds
        self._seeds_file = seeds_file
        self._scope_arg = scope
        self._follow_sitemaps = sitemaps.strip().lower() in ("1", "true", "yes")
        self._link_extractor = LinkExtractor()
        self._bad_sitemap_logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider._follow_sitemaps:
            crawler.signals.connect(
                spider.follow_robots_sitemaps, signal=robots_sitemaps
            )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        seeds = self._seeds()
        self._scope = Scope(self._scope_arg or self.settings.get("BFS_SCOPE"), seeds)
        if not seeds:
            self.logger.info("No seeds given: crawling what the frontier holds")
        for url in seeds:
            yield Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Iterator[Any]:
        links = []
        if isinstance(response, TextResponse):
            links = [
                link.url
                for link in self._link_extractor.extract_links(response)
                if self._scope.allows(link.url)
            ]
        yield self._record(response, len(links))
        for url in links:
            yield Request(url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> Iterator[PageRecord]:
        """A request that failed for good (given up, refused, robots) gets a record
        with status 0 and the error, so the record database shows every URL tried."""
        request = failure.request  # type: ignore[attr-defined]
        if isinstance(failure.value, IgnoreRequest):
            return  # robots.txt or a filter dropped it: counted in stats, not a page
        yield PageRecord(
            url=request.url,
            status=0,
            depth=request.meta.get("depth", 0),
            title=None,
            content_type=None,
            length=0,
            links=0,
            fetched_at=_now(),
            host=_host(request.url),
            tier=request.meta.get("tier", 0),
            node=request.meta.get(NODE_META_KEY, ""),
            error=f"{type(failure.value).__name__}: {failure.getErrorMessage()}"[:500],
        )

    def follow_robots_sitemaps(self, sitemaps: Sequence[str], request: Request) -> None:
        """Queue the sitemaps a robots.txt lists, at the depth of *request*."""
        depth = request.meta.get("depth", 0)
        for url in sitemaps:
            if self._scope.allows(url):
                sitemap = Request(
                    url, callback=self.parse_sitemap, meta={"depth": depth}
                )
                self.crawler.engine.crawl(sitemap)

    def parse_sitemap(self, response: Response) -> Iterator[Request]:
        """Follow a sitemap's pages, or a sitemap index's sitemaps, in scope."""
        try:
            sitemap = Sitemap(self._sitemap_body(response))
            entries = [entry["loc"] for entry in sitemap]
        except (SyntaxError, ValueError, OSError, EOFError, StopIteration) as exc:
            self._bad_sitemap(response, exc)  # XMLSyntaxError is a SyntaxError
            return
        if sitemap.type not in ("urlset", "sitemapindex"):
            self._bad_sitemap(response, ValueError(f"root element {sitemap.type!r}"))
            return
        callback = self.parse if sitemap.type == "urlset" else self.parse_sitemap
        for loc in entries:
            try:
                url = response.urljoin(loc)
            except ValueError:  # e.g. an unbalanced "[" in the host
                continue
            if url.startswith(("http://", "https://")) and self._scope.allows(url):
                yield Request(url, callback=callback)

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

    def _record(self, response: Response, links: int) -> PageRecord:
        title = None
        if isinstance(response, TextResponse):
            title = response.css("title::text").get()
        content_type = response.headers.get("Content-Type")
        last_modified = response.headers.get("Last-Modified")
        return PageRecord(
            url=response.url,
            status=response.status,
            depth=response.meta.get("depth", 0),
            title=title.strip() if title else None,
            content_type=content_type.decode("latin-1") if content_type else None,
            length=len(response.body),
            links=links,
            fetched_at=_now(),
            host=_host(response.url),
            last_modified=last_modified.decode("latin-1") if last_modified else None,
            content_hash=hashlib.sha256(response.body).hexdigest(),
            tier=response.meta.get("tier", 0),
            node=response.meta.get(NODE_META_KEY, ""),
            body=response.body,
        )

    def _seeds(self) -> list[str]:
        lines = [("-a seeds", 0, url) for url in self._seed_arg.split(",")]
        if self._seeds_file:
            text = Path(self._seeds_file).read_text(encoding="utf-8")
            lines += [
                (self._seeds_file, number, line)
                for number, line in enumerate(text.splitlines(), start=1)
            ]
        seeds = []
        for source, number, line in lines:
            try:
                url = parse_seed(line)
            except ValueError as exc:
                where = f"{source} line {number}" if number else source
                self.logger.error("%s: %s; skipped", where, exc)
                self.crawler.stats.inc_value("bfs/bad_seeds")
                continue
            if url:
                seeds.append(url)
        return seeds


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _host(url: str) -> str:
    try:
        return host_of(url)
    except BadURLError:
        return ""
