"""The robots.txt records the cluster shares in Redis, each fetched by one node.

An origin's record is read from ``CrawlKeys.robots``; when it is missing or stale,
the node that takes the origin's lock (``CrawlKeys.robots_lock``, expiring after the
longest fetch it guards) downloads the file and writes the record, while the others
wait for it. While Redis is away, a lookup waits for it (``patiently``) instead of
failing. State the crawler did not write (a key of the wrong type, a record it
cannot read, a lock without expiry) is replaced, counted in ``robots/bad_records``
and logged once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import TYPE_CHECKING

from redis.exceptions import LockError, ResponseError

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS, is_outage, patiently
from crawler.policy.robotsfetch import (
    BadRecordError,
    Fetch,
    RobotsConfig,
    RobotsRecord,
    record_after,
    retention,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import redis.asyncio
    from redis.asyncio.lock import Lock
    from scrapy.crawler import Crawler

    from crawler.crawlstate.keys import CrawlKeys

logger = logging.getLogger(__name__)

# Seconds between two looks at a robots.txt that another node is fetching.
POLL_INTERVAL = 0.1
# Seconds the fetch lock outlives the longest fetch it guards.
LOCK_MARGIN = 5.0


class RobotsRecords:
    """Every origin's record, from Redis or from a fetch this node makes under the
    origin's lock; *download* makes the fetch."""

    def __init__(
        self,
        crawler: Crawler,
        config: RobotsConfig,
        keys: CrawlKeys,
        download: Callable[[str], Awaitable[Fetch]],
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._keys = keys
        self._download = download
        self._lock_timeout = config.fetch_budget + LOCK_MARGIN
        self._redis: redis.asyncio.Redis | None = None
        self._gate = CrawlContext.of(crawler).outage.gate("the robots middleware")
        self._once = OnceLogger(logger, crawler)

    async def load(self, origin: str) -> tuple[RobotsRecord, bool]:
        """The fresh record in Redis, else one this node fetches under the lock; and
        whether it fetched. A node that finds the lock taken waits for the record, at
        most as long as the lock can live, then fetches the file itself."""
        deadline = time.monotonic() + self._lock_timeout + 1.0
        waited = False
        while True:
            record, _ = await self._read(origin)
            if record is not None and record.fresh(time.time()):
                self._stats.inc_value("robots/cache_hits")
                return record, False
            lock = self._client().lock(
                self._keys.robots_lock(origin), timeout=self._lock_timeout
            )
            if await patiently(self._gate, partial(lock.acquire, blocking=False)):
                try:
                    return await self._load_locked(origin)
                finally:
                    await self._release(lock)
            if time.monotonic() >= deadline:
                break
            if await self._stale_lock(origin):
                continue
            if not waited:
                waited = True
                self._stats.inc_value("robots/lock_waits")
            await asyncio.sleep(POLL_INTERVAL)
        logger.warning(
            "Waited %(seconds).0fs for another node to fetch robots.txt of "
            "%(origin)s; fetching it here",
            {"seconds": self._lock_timeout, "origin": origin},
            extra={"spider": self._crawler.spider},
        )
        return await self._fetch_and_store(origin, record), True

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _stale_lock(self, origin: str) -> bool:
        """Delete *origin*'s fetch lock if no node wrote it (it has no expiry); whether
        it did."""
        key = self._keys.robots_lock(origin)
        if await self._client().pttl(key) != -1:
            return False
        await self._client().delete(key)
        self._bad_record(f"the fetch lock of {origin} had no expiry: deleted")
        return True

    async def _load_locked(self, origin: str) -> tuple[RobotsRecord, bool]:
        record, error = await self._read(origin)
        if record is not None and record.fresh(time.time()):
            self._stats.inc_value("robots/cache_hits")  # written while we waited
            return record, False
        if error is not None:
            self._bad_record(f"the record of {origin}: {error}; fetching it again")
        return await self._fetch_and_store(origin, record), True

    async def _read(
        self, origin: str
    ) -> tuple[RobotsRecord | None, BadRecordError | None]:
        """*origin*'s record, or None; and why the one found could not be read. A
        key of the wrong type is deleted (counted here)."""
        key = self._keys.robots(origin)
        try:
            data = await patiently(self._gate, lambda: self._client().get(key))
        except ResponseError:  # a key of the wrong type where the record belongs
            kind = await self._client().type(key)
            if kind in (b"string", b"none"):
                raise
            await self._client().delete(key)
            self._bad_record(
                f"the record of {origin} was a {kind!r}: deleted, fetching it again"
            )
            return None, None
        if data is None:
            return None, None
        try:
            return RobotsRecord.from_json(data), None
        except BadRecordError as exc:
            return None, exc

    async def _fetch_and_store(
        self, origin: str, previous: RobotsRecord | None
    ) -> RobotsRecord:
        fetch = await self._download(origin)
        now = time.time()
        record = record_after(self._config, fetch, now=now, previous=previous)
        key, ttl = self._keys.robots(origin), retention(self._config, record, now=now)
        await patiently(
            self._gate, lambda: self._client().set(key, record.to_json(), ex=ttl)
        )
        return record

    async def _release(self, lock: Lock) -> None:
        """Free the fetch lock; one that expired, or that Redis is away to free,
        frees itself when its timeout ends (the others wait at most that long)."""
        try:
            await lock.release()
        except LockError:
            return  # expired: nothing to free
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._gate.failed(exc, time.time())

    def _bad_record(self, what: str) -> None:
        """Count robots.txt state the crawler did not write; log the first."""
        self._once.event(
            "robots/bad_records",
            "Replaced robots.txt state the crawler did not write (%(what)s); "
            "further ones are only counted in robots/bad_records",
            {"what": what},
        )

    def _client(self) -> redis.asyncio.Redis:
        if self._redis is None:  # made on first use: no I/O at start-up
            self._redis = CrawlContext.of(self._crawler).redis.async_client()
        return self._redis
