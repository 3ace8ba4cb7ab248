"""NearDuplicatesMiddleware: a page whose text is nearly that of another page of
its host (a printer-friendly copy, a mirror under another URL) is marked so.

Each HTML page's record carries the SimHash of its text (``PageRecord.text_hash``).
This spider middleware looks it up in its host's banded index in Redis
(``CrawlKeys.near_duplicates``: a set a band, ``crawler.policy.simhash.bands``), so
every node sees the pages every other node fetched: a page within
``NEARDUP_MAX_DISTANCE`` bits of another URL's page is a near-duplicate (its record's
``near_duplicate``, ``neardup/pages``, and one of its host's ``traps``). Then its own
fingerprint joins the index. Two nodes fetching two copies at the same instant may
both miss the other; a revisit never matches its own URL. The index of a host
expires a week after its last page. Without Redis the page is recorded unmarked.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any

from crawler.context.asyncclient import LazyAsyncClient
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.items import PageRecord
from crawler.policy.simhash import NearDupConfig, bands, decode, hamming
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

KEPT_FOR = 7 * 86_400  # seconds a host's index outlives its last page
STALE_TRIES = 3  # tries of one look-up through connections the server may have closed


class NearDuplicatesMiddleware:
    def __init__(self, crawler: Crawler, config: NearDupConfig) -> None:
        assert crawler.spider is not None
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._keys = CrawlKeys.of(crawler.settings, crawler.spider.name)
        self._redis = LazyAsyncClient(crawler)
        self._gate = CrawlContext.of(crawler).outage.gate("near-duplicates")
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = NearDupConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            if isinstance(output, PageRecord) and self._looked_for(output):
                output.near_duplicate = await self._near_duplicate(output)
            yield output

    def _looked_for(self, record: PageRecord) -> bool:
        return (
            self._config.enabled
            and record.fate == "fetched"
            and record.text_hash is not None
            and bool(record.host)
        )

    async def _near_duplicate(self, record: PageRecord) -> bool:
        """Whether *record*'s page is near another URL's page of its host; its
        fingerprint is added to the index either way."""
        assert record.text_hash is not None
        try:
            fingerprint = decode(record.text_hash)
        except ValueError:
            return False
        own = _url_key(record.url)
        member = f"{record.text_hash}:{own}"
        keys = [
            self._keys.near_duplicates(record.host, band)
            for band in bands(fingerprint, self._config.max_distance)
        ]
        if not self._gate.ready(time.time()):
            self._stats.inc_value("neardup/errors")  # Redis is away: unmarked
            return False
        found = await self._look_up(keys, member)
        if found is None:
            return False
        near = any(
            url_key != own and hamming(fingerprint, other) <= self._config.max_distance
            for other, url_key in found
        )
        if near:
            self._stats.inc_value("neardup/pages")
            self._crawler.signals.send_catch_log(
                trap_cut, url=record.url, rule="near_duplicate"
            )
        return near

    async def _look_up(
        self, keys: list[str], member: str
    ) -> list[tuple[int, str]] | None:
        """The candidates sharing a band, the page added; None if Redis failed. A
        connection the server closed (Redis restarted) is tried again at once, on
        another, as often as the pool may hold such connections."""
        for attempt in range(STALE_TRIES):
            try:
                found = await self._candidates(keys)
                await self._add(keys, member)
            except REDIS_ERRORS as exc:
                if is_outage(exc) and attempt + 1 < STALE_TRIES:
                    continue
                self._failed(exc)
                return None
            self._gate.succeeded()
            return found
        return None

    def _failed(self, error: Exception) -> None:
        """An outage is the crawl's to report (one line for every component);
        anything else is logged here once. Either way the page goes unmarked."""
        if is_outage(error):
            self._stats.inc_value("neardup/errors")
            self._gate.failed(error, time.time())
            return
        self._once.event(
            "neardup/errors",
            "Could not look for near-duplicates in Redis (%(error)s): pages are "
            "recorded unmarked; further ones are counted in neardup/errors",
            {"error": error},
        )

    async def _candidates(self, keys: list[str]) -> list[tuple[int, str]]:
        """The fingerprints (and URL keys) that share a band with the page."""
        pipe = self._redis().pipeline(transaction=False)
        for key in keys:
            pipe.smembers(key)
        found = []
        for members in await pipe.execute():
            for member in members:
                text = member.decode("ascii", "replace")
                hex_part, _, url_key = text.partition(":")
                try:
                    found.append((decode(hex_part), url_key))
                except ValueError:
                    continue  # a member this crawler did not write
        return found

    async def _add(self, keys: list[str], member: str) -> None:
        pipe = self._redis().pipeline(transaction=False)
        for key in keys:
            pipe.sadd(key, member)
            pipe.expire(key, KEPT_FOR)
        await pipe.execute()


def _url_key(url: str) -> str:
    """A short stable key of *url*: a revisit of it is not its own near-duplicate."""
    return hashlib.blake2b(url.encode("utf-8", "replace"), digest_size=6).hexdigest()
