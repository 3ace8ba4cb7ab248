"""The hosts' timeout records (slow, paused): in Redis for the cluster, cached here.

Written by the timeouts middleware (``crawler.middlewares.timeouts``) as its hosts
time out and recover, in the crawl's health hash (``CrawlKeys.health``, one field a
host, ``HostHealth`` as JSON), so every node starts a slow host on a looser tier.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import (
    REDIS_ERRORS,
    is_outage,
    use_reactor_retry,
)
from crawler.crawlstate.damage import retyped
from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.tiers import BadHealthRecordError, HostHealth

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Host records kept in this process, and how long one is trusted before it is
# read again (other nodes mark hosts too).
HEALTH_CACHE_SIZE = 65536
HEALTH_CACHE_SECONDS = 60.0


class HostRecords:
    """The hosts' timeout records: in Redis for the cluster, cached in this process.

    While Redis is away a record is taken from the cache however old, else a
    host counts as healthy; records changed meanwhile are written when it is back.
    """

    def __init__(self, crawler: Crawler) -> None:
        assert crawler.spider is not None
        self._crawler = crawler
        self._key = CrawlKeys.of(crawler.settings, crawler.spider.name).health
        self._client: redis.Redis | None = None
        self._cache: OrderedDict[str, tuple[HostHealth, float]] = OrderedDict()
        self._unwritten: dict[str, HostHealth] = {}
        self._gate = CrawlContext.of(crawler).outage.gate("the timeouts middleware")
        self._once = OnceLogger(logger, crawler)

    def get(self, host: str) -> HostHealth:
        now = time.monotonic()
        cached = self._cache.get(host)
        if cached is not None and now - cached[1] < HEALTH_CACHE_SECONDS:
            self._cache.move_to_end(host)
            return cached[0]
        known = cached[0] if cached is not None else HostHealth()
        if not self._gate.ready(time.time()):
            return known
        try:
            client = self._redis()
            raw = retyped(
                client,
                self._key,
                "hash",
                lambda: client.hget(self._key, host),
                self._bad,
            )
        except REDIS_ERRORS as exc:
            self._failed(exc)
            return known
        self._gate.succeeded()
        health = HostHealth()
        if raw is not None:
            try:
                health = HostHealth.from_json(raw)
            except BadHealthRecordError as exc:
                self._bad(1, f"the record of {host}: {exc}")
        self._remember(host, health, now)
        self._write_unwritten()
        return health

    def put(self, host: str, health: HostHealth) -> None:
        self._remember(host, health, time.monotonic())
        self._unwritten[host] = health
        if len(self._unwritten) > HEALTH_CACHE_SIZE:  # Redis away for long: bounded
            del self._unwritten[next(iter(self._unwritten))]
        self._write_unwritten()

    def _write_unwritten(self) -> None:
        """Write the records changed since Redis last took one (one round trip)."""
        if not self._unwritten or not self._gate.ready(time.time()):
            return
        mapping = {host: health.to_json() for host, health in self._unwritten.items()}
        try:
            client = self._redis()
            retyped(
                client,
                self._key,
                "hash",
                lambda: client.hset(self._key, mapping=mapping),  # type: ignore[arg-type]
                self._bad,
            )
        except REDIS_ERRORS as exc:
            self._failed(exc)
            return
        self._gate.succeeded()
        self._unwritten.clear()

    def _failed(self, error: Exception) -> None:
        if not is_outage(error):
            raise error
        self._gate.failed(error, time.time())

    def _bad(self, count: int, what: str) -> None:
        """Count a health record the crawler did not write (ignored); log the first."""
        self._once.event(
            "timeouts/bad_records",
            "Ignored host health state the crawler did not write (%(what)s); "
            "further ones are only counted in timeouts/bad_records",
            {"what": what},
            count=count,
        )

    def _remember(self, host: str, health: HostHealth, now: float) -> None:
        self._cache[host] = (health, now)
        self._cache.move_to_end(host)
        if len(self._cache) > HEALTH_CACHE_SIZE:
            self._cache.popitem(last=False)

    def _redis(self) -> redis.Redis:
        if self._client is None:
            self._client = CrawlContext.of(self._crawler).redis.sync_client()
            use_reactor_retry(self._client)  # a longer wait is self._gate's
        return self._client
