"""BfsSpider: seeds in, links out. Order, politeness and limits belong to the frontier."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor

from crawler.items import PageRecord
from crawler.policy.scope import Scope, parse_seed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.http import Response


class BfsSpider(Spider):
    """Crawls breadth-first from ``-a seeds=URL,URL`` and/or ``-a seeds_file=PATH``.

    ``-a scope=any|seed-hosts|seed-domains`` limits which links are followed
    (default: the ``BFS_SCOPE`` setting).
    """

    name = "bfs"

    def __init__(
        self,
        seeds: str = "",
        seeds_file: str = "",
        scope: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._seed_arg = seeds
        self._seeds_file = seeds_file
        self._scope_arg = scope
        self._link_extractor = LinkExtractor()

    async def start(self) -> AsyncIterator[Any]:
        seeds = self._seeds()
        self._scope = Scope(self._scope_arg or self.settings.get("BFS_SCOPE"), seeds)
        if not seeds:
            self.logger.info("No seeds given: crawling what the frontier holds")
        for url in seeds:
            yield Request(url, callback=self.parse)

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
            yield Request(url, callback=self.parse)

    def _record(self, response: Response, links: int) -> PageRecord:
        title = None
        if isinstance(response, TextResponse):
            title = response.css("title::text").get()
        content_type = response.headers.get("Content-Type")
        return PageRecord(
            url=response.url,
            status=response.status,
            depth=response.meta.get("depth", 0),
            title=title.strip() if title else None,
            content_type=content_type.decode("latin-1") if content_type else None,
            length=len(response.body),
            links=links,
            fetched_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
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
