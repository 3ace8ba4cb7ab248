"""Queue an analysis task per stored page on the crawl's task stream.

Runs after the page store (which sets ``item.store_path``) and the records pipeline.
Items with no stored page are passed on untouched. The analyzer of a page is the
first of the spider's optional ``analysis_rules`` (``[(regex, analyzer), ...]``,
matched with ``re.search`` against the URL; an analyzer is an ``ANALYZERS`` name or a
dotted class path) that matches, else ``ANALYSIS_DEFAULT``. A task names its page by
key (``store_path``) and by full address (``page``, in ``PAGESTORE_URL``).
Tasks are consumed by ``scrapy analyze`` (``crawler.analysis.worker``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import fields
from functools import partial
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.analysis.analysisconfig import AnalysisConfig
from crawler.analysis.tasks import AnalysisTask
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import patiently
from crawler.context.startup import StartupFailure
from crawler.crawlstate.connection import RedisUnreachableError
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.crawlstate.keys import CrawlKeys
from crawler.items import PageRecord

if TYPE_CHECKING:
    from typing import Self

    import redis.asyncio
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class AnalysisPipeline:
    # Handed the page record of each response a spider handled without making one
    # (crawler.spiders.responserecords), and depth repairs.
    takes_page_records = True

    def __init__(
        self,
        crawler: Crawler,
        client: redis.asyncio.Redis,
        config: AnalysisConfig,
        keys: CrawlKeys,
    ) -> None:
        self._crawler = crawler
        self._client = client
        self._config = config
        self._keys = keys
        self._once = OnceLogger(logger, crawler)
        self._rules: list[tuple[re.Pattern[str], str]] = []
        self._gate = CrawlContext.of(crawler).outage.gate("the analysis pipeline")
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ANALYSIS_ENABLED"):
            raise NotConfigured  # off by default: no message (a message warns)
        config = AnalysisConfig.from_settings(crawler.settings)
        keys = CrawlKeys.of(crawler.settings, crawler.spidercls.name)
        try:
            client = CrawlContext.of(crawler).redis.async_client()
        except (RedisUnreachableError, EmbeddedRedisError) as exc:
            # Bad Redis settings, or a private server that cannot start: one line.
            StartupFailure(crawler, str(exc))
            raise NotConfigured from None  # said once, by StartupFailure
        return cls(crawler, client, config, keys)

    def open_spider(self) -> None:
        self._rules = analysis_rules(
            getattr(self._crawler.spider, "analysis_rules", []), self._config
        )

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageRecord) or not item.store_path:
            return item
        task = AnalysisTask(
            url=item.url,
            store_path=item.store_path,
            record=record_of(item),
            analyzer=self.analyzer_for(item.url),
            page=self._config.page_store.url_of(item.store_path),
            content_type=item.content_type or "",
        )
        try:
            await patiently(self._gate, partial(self._add, task))  # Redis away: waits
        except ResponseError:  # a key of the wrong type where the stream belongs?
            await self._replace_stream()
            await self._add(task)  # an error that stays propagates
        self._crawler.stats.inc_value("analysis/queued")
        return item

    async def _replace_stream(self) -> None:
        """Delete the stream's key if it is not a stream (counted, logged once)."""
        kind = await self._client.type(self._keys.analysis_tasks)
        if kind in (b"stream", b"none"):
            return  # another write replaced it first, or another error
        await self._client.delete(self._keys.analysis_tasks)
        self._once.event(
            "analysis/bad_records",
            "Deleted %(key)s, a %(kind)r the crawler did not write, where the "
            "analysis stream belongs",
            {"key": self._keys.analysis_tasks, "kind": kind},
        )

    async def _add(self, task: AnalysisTask) -> None:
        await self._client.xadd(
            self._keys.analysis_tasks,
            task.to_fields(),  # type: ignore[arg-type]
            maxlen=self._config.stream_maxlen,
            approximate=True,
        )

    def analyzer_for(self, url: str) -> str:
        """The analyzer of *url* (a name or a dotted path): first matching rule,
        else the default."""
        for pattern, path in self._rules:
            if pattern.search(url):
                return path
        return self._config.default_analyzer

    async def _spider_closed(self) -> None:
        await self._client.aclose()


def analysis_rules(
    rules: Any, config: AnalysisConfig
) -> list[tuple[re.Pattern[str], str]]:
    """A spider's ``analysis_rules`` compiled; raise ``ValueError`` in one line
    saying what is wrong (at start, not per page)."""
    try:
        compiled = [(re.compile(pattern), name) for pattern, name in rules]
    except (TypeError, ValueError, re.error) as exc:
        raise ValueError(
            f"analysis_rules must be [(regex, 'module.Class' or ANALYZERS name), "
            f"...]: {exc}"
        ) from None
    for _pattern, name in compiled:
        if not isinstance(name, str) or not config.names_analyzer(name):
            raise ValueError(
                f"analysis_rules: {name!r} is neither an ANALYZERS name nor a "
                "dotted class path"
            )
    return compiled


def record_of(item: PageRecord) -> dict[str, Any]:
    """The record of *item* for a task: every field but the body."""
    return {f.name: getattr(item, f.name) for f in fields(item) if f.name != "body"}
