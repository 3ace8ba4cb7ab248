"""ResponseRecordsMiddleware: every response a spider handled gets its page record,
whatever the spider yields, and records never reach a project's feeds uninvited.

A page record is per fetched URL, not per item: a user's callback that yields no
item, one, or many (dicts, ``scrapy.Item``, dataclasses, attrs) has its response
recorded once, and stored in the page store, by the pipelines that take page
records (``takes_page_records`` on the pipeline class: the page store, records and
analysis pipelines). The record goes to those pipelines directly, not through
Scrapy's item processing: the project's own pipelines and its ``-O`` feed see only
its own items. A spider that yields ``PageRecord`` items itself (``bfs``) records
its pages itself, and nothing is added.

A ``DepthRepair`` in a spider's output (the ``bfs`` spider's answer to a page
reparsed at a shorter depth) also goes to those pipelines only: the page was
recorded, and fed, when it was fetched.

The response's request stays in progress until its record is through the
pipelines, so the frontier acknowledges no page before its record is committed.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import DropItem

from crawler.items import DepthRepair, PageRecord
from crawler.meta import REPARSED
from crawler.policy.fates import fate_of_status
from crawler.spiders.pagerecords import is_html, page_record

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

# Statuses below this are pages; from it on, answers whose fate the status says.
FIRST_REFUSED_STATUS = 300


class ResponseRecordsMiddleware:
    """Spider middleware: a page record for each response whose spider made none."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._pipelines: Sequence[Any] | None = None  # found once the engine runs

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """Pass the spider's output through; take its depth repairs to the
        pipelines; once it is done, record the response if the spider did not."""
        recorded = bool(response.meta.get(REPARSED))  # recorded when fetched
        links = 0
        try:
            async for output in result:
                if isinstance(output, DepthRepair):
                    recorded = True
                    await self._through_pipelines(output)
                    continue
                if isinstance(output, PageRecord):
                    recorded = True
                elif isinstance(output, Request):
                    links += 1
                yield output
        finally:
            if not recorded:
                await self._record(response, links)

    async def _record(self, response: Response, links: int) -> None:
        """Record *response*, and store it, in the pipelines that take records."""
        if not self._page_pipelines():
            return
        status = response.status
        fate = "fetched" if status < FIRST_REFUSED_STATUS else fate_of_status(status)
        title = response.css("title::text").get() if is_html(response) else None
        record = page_record(response, links, title=title, fate=fate)
        await self._through_pipelines(record)

    async def _through_pipelines(self, item: PageRecord | DepthRepair) -> None:
        """*item* through each pipeline that takes page records, in their order."""
        for pipeline in self._page_pipelines():
            try:
                result = pipeline.process_item(item)
                if inspect.isawaitable(result):
                    await result
            except DropItem:
                return

    def _page_pipelines(self) -> Sequence[Any]:
        """The crawl's item pipelines that take page records, in their order."""
        if self._pipelines is None:
            engine = self._crawler.engine
            if engine is None:
                return ()
            pipelines = getattr(engine.scraper.itemproc, "middlewares", ())
            self._pipelines = tuple(
                pipeline
                for pipeline in pipelines
                if getattr(pipeline, "takes_page_records", False)
            )
        return self._pipelines
