"""Per-host traffic counters in Redis, read by ``scrapy frontier hosts``.

Closest to the downloader, so every download is seen, robots.txt fetches included:
requests sent, response bytes (the body as downloaded, before decompression),
responses by status class, download errors, the last fetch time, and the delay in
force for the host with its reason. Counts are buffered in memory
(``crawler.middlewares.trafficbuffer``) and written every ``FLUSH_INTERVAL`` seconds
with one pipeline, never one round trip per response.

State that ends: a host's counters expire ``TRAFFIC_IDLE_TTL`` after its last fetch,
and each ranking holds the top ``TRAFFIC_RANK_SIZE`` hosts by their totals, less the
hosts idle that long (``CrawlKeys.traffic_active``), so a host done with costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakSet

import redis
import redis.asyncio
from redis.exceptions import RedisClusterException
from scrapy import signals
from scrapy.utils.asyncio import create_looping_call

from crawler.context.crawl import CrawlContext
from crawler.context.enginehooks import engine_closing
from crawler.context.logonce import OnceLogger
from crawler.context.outage import is_outage
from crawler.context.startup import StartupFailure
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.crawlstate.keys import CrawlKeys
from crawler.middlewares.trafficbuffer import HostTraffic, TrafficBuffer
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.trafficconfig import TrafficConfig
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from crawler.context.hostdelays import HostDelays

logger = logging.getLogger(__name__)

# Seconds between two writes of the buffered counts to Redis.
FLUSH_INTERVAL = 1.0
# Counters kept in a ZSET each (host -> value), so a top-N table is cheap;
# failures: 4xx and 5xx answers (robots.txt's aside) and download errors.
RANK_METRICS = ("requests", "bytes", "errors", "failures")
# Idle hosts taken out of the rankings per flush, at most (the rest next time).
IDLE_BATCH = 500
# Errors a flush may meet: its counts are kept for the next one.
_UNREACHABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    RedisClusterException,  # a cluster none of whose nodes answers
    OSError,
    EmbeddedRedisError,
)


class TrafficMiddleware:
    """Counts each host's downloads and writes them to Redis in batches."""

    def __init__(
        self,
        crawler: Crawler,
        keys: CrawlKeys,
        config: TrafficConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._keys = keys
        self._config = config
        self._stats = crawler.stats
        self._clock = clock
        self.buffer = TrafficBuffer()
        # Requests this middleware passed to the downloader: an exception raised by
        # an earlier middleware's process_request (robots) is not a download error.
        self._sent: WeakSet[Request] = WeakSet()
        self._client: redis.asyncio.Redis | None = None
        self._delays: HostDelays | None = None
        self._loop: AsyncioLoopingCall | LoopingCall | None = None
        self._flushing: asyncio.Task[None] | None = None
        self._in_flight: list[str] = []  # hosts of the last flush (see _forget)
        self._once = OnceLogger(logger, crawler)
        self._gate = CrawlContext.of(crawler).outage.gate("the traffic counters")
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._trap_cut, signal=trap_cut)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = TrafficConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        keys = CrawlKeys.of(crawler.settings, crawler.spidercls.name)
        return cls(crawler, keys, config)

    # --- counting ------------------------------------------------------------------

    def process_request(self, request: Request) -> None:
        if (host := _host_key(request.url)) is not None:
            self._sent.add(request)
            self.buffer.request(host)

    def process_response(self, request: Request, response: Response) -> Response:
        if request in self._sent:
            self._sent.discard(request)
            self.buffer.response(
                _host_key(request.url) or "",
                status=response.status,
                size=len(response.body),
                now=self._clock(),
                # A robots.txt that is not there is no failure of the host.
                failed=response.status >= 400 and not _is_robots(request.url),
            )
        return response

    def _trap_cut(self, url: str) -> None:
        """A link of *url*'s host cut as a spider trap, or a soft 404 of it
        (``crawler.signals.trap_cut``): shown in the host's ``traps``."""
        if (host := _host_key(url)) is not None:
            self.buffer.trap(host)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if request in self._sent:
            self._sent.discard(request)
            self.buffer.error(_host_key(request.url) or "", now=self._clock())

    # --- writing -------------------------------------------------------------------

    def _spider_opened(self) -> None:
        self._loop = create_looping_call(self._tick)
        self._loop.start(FLUSH_INTERVAL, now=False)

    def _tick(self) -> None:
        """Start a flush unless one is running, nothing is buffered, or the spider
        is closing (the scheduler may be deleting the crawl: see _spider_closed)."""
        if self._flushing is not None or not self.buffer or self._closing():
            return
        if not self._gate.ready(self._clock()):
            return  # Redis is away: the counts wait in the buffer
        self._flushing = asyncio.ensure_future(self.flush())
        self._flushing.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        self._flushing = None
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error(
                "Writing traffic counters failed",
                exc_info=error,
                extra={"spider": self._crawler.spider},
            )

    def _closing(self) -> bool:
        return engine_closing(self._crawler)

    async def flush(self) -> None:
        """Write the buffered counts in one pipeline; if Redis cannot be reached
        they are kept for the next flush (counted and logged once)."""
        taken = self.buffer.take()
        if not taken:
            return
        self._in_flight = list(taken)
        try:
            rejected = await self._write(taken, self._clock())
        except _UNREACHABLE as exc:
            self.buffer.put_back(taken)
            self._unreachable(exc)
            return
        self._gate.succeeded()
        if rejected:
            self._stats.inc_value("traffic/rejected_writes", len(rejected))
            self._log_failure_once("Redis refused traffic counters", rejected[0])

    async def _write(
        self, taken: dict[str, HostTraffic], now: float
    ) -> list[Exception]:
        """Add the counts and find the hosts gone idle (one round trip), then rank
        the hosts by the totals Redis answered (a second); the errors of commands
        Redis refused (a hostile field)."""
        pipe = self._redis().pipeline(transaction=False)
        ranked: list[tuple[str, str]] = []  # (metric, host) of each total asked
        for host, traffic in taken.items():
            ranked += self._queue_host(pipe, host, traffic, now)
        for metric, host in ranked:  # totals: the replies before the EXPIREs and ZSETs
            pipe.hincrby(self._keys.traffic(host), metric, taken[host].counts[metric])
        for host in taken:  # after every write: a key HINCRBY made has a TTL too
            pipe.expire(self._keys.traffic(host), self._config.idle_ttl)
        active = self._keys.traffic_active
        pipe.zadd(active, dict.fromkeys(taken, round(now, 3)))
        idle_since = now - self._config.idle_ttl
        pipe.zrangebyscore(active, "-inf", f"({idle_since}", start=0, num=IDLE_BATCH)
        *results, idle = await pipe.execute(raise_on_error=False)
        end = len(results) - len(taken) - 1
        totals = dict(zip(ranked, results[end - len(ranked) : end], strict=True))
        errors = [result for result in results if isinstance(result, Exception)]
        if isinstance(idle, Exception):
            errors.append(idle)
            idle = []
        try:
            return errors + await self._rank(totals, idle)
        except _UNREACHABLE as exc:  # the counts are in: the next flush ranks them
            self._unreachable(exc)
            return errors

    async def _rank(
        self, totals: dict[tuple[str, str], Any], idle: list[bytes]
    ) -> list[Exception]:
        """Take the hosts idle past TRAFFIC_IDLE_TTL (their counters expired) out of
        the rankings, put each host written now in them at its total (``GT``: a
        total another node read later and wrote first stands), and keep each
        ranking's top N."""
        pipe = self._redis().pipeline(transaction=False)
        if idle:
            for key in [
                *map(self._keys.traffic_rank, RANK_METRICS),
                self._keys.traffic_active,
            ]:
                pipe.zrem(key, *idle)  # one key a command: a Cluster's keys spread
        for (metric, host), total in totals.items():
            if isinstance(total, int):
                pipe.zadd(self._keys.traffic_rank(metric), {host: total}, gt=True)
        for metric in {metric for metric, _host in totals}:
            pipe.zremrangebyrank(
                self._keys.traffic_rank(metric), 0, -self._config.rank_size - 1
            )
        results = await pipe.execute(raise_on_error=False)
        return [result for result in results if isinstance(result, Exception)]

    def _redis(self) -> redis.asyncio.Redis:
        """The client, made on first use: the crawl's Redis may be a private server
        the scheduler starts when it opens."""
        if self._client is None:
            self._client = CrawlContext.of(self._crawler).redis.async_client()
        return self._client

    def _queue_host(
        self,
        pipe: redis.asyncio.client.Pipeline,
        host: str,
        traffic: HostTraffic,
        now: float,
    ) -> list[tuple[str, str]]:
        """Queue the host's writes but its ranked counts, which ``_write`` adds
        after every host's: the (metric, host) of each."""
        key = self._keys.traffic(host)
        for name, count in traffic.counts.items():
            if count and name not in RANK_METRICS:
                pipe.hincrby(key, name, count)
        fields: dict[str, str] = {}
        if traffic.last_fetch is not None:
            fields["last_fetch"] = f"{traffic.last_fetch:.3f}"
        if (delays := self._host_delays()) is not None:
            delay = delays.in_force(host, now=now)
            reason: str = delay.reason
            if reason == "throttled" and (learnt := delays.learnt(host)) is not None:
                reason = f"throttled ({learnt.reason})"  # what the host answered
            fields |= {"delay": f"{delay.seconds:g}", "reason": reason}
        if fields:
            pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
        return [(metric, host) for metric in RANK_METRICS if traffic.counts[metric]]

    def _host_delays(self) -> HostDelays | None:
        """The crawl's delays; None if a politeness setting is bad (the scheduler
        has said so and is closing the spider)."""
        if self._delays is None:
            try:
                self._delays = CrawlContext.of(self._crawler).delays
            except ValueError:
                return None
        return self._delays

    def _unreachable(self, error: Exception) -> None:
        """Count a flush that could not reach Redis; an outage is the crawl's to
        report (one line for every component), anything else is logged here once."""
        self._stats.inc_value("traffic/flush_errors")
        if is_outage(error):
            self._gate.failed(error, self._clock())
        else:
            self._log_failure_once("could not write traffic counters to Redis", error)

    def _log_failure_once(self, what: str, error: Exception) -> None:
        """One line for the first failure of either kind: both keys count them."""
        self._once.once(
            "failure",
            "%(what)s (%(error)s); further failures are only counted in "
            "traffic/flush_errors and traffic/rejected_writes",
            {"what": what, "error": error},
        )

    async def _spider_closed(self) -> None:
        """The last flush, unless the scheduler deleted the crawl (not persisted):
        its counters would come back alone. Then the client is closed."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        late = self._in_flight
        if self._flushing is not None:
            await asyncio.wait([self._flushing])
        try:
            if (self.buffer or late) and await self._crawl_exists():
                if self.buffer:
                    await self.flush()
            elif late:  # a flush that ran as the scheduler deleted the crawl
                await self._forget(late)
        finally:
            if self._client is not None:
                await self._client.aclose()
                self._client = None

    async def _forget(self, hosts: list[str]) -> None:
        """Delete what a late flush wrote back into a crawl that was deleted."""
        keys = [self._keys.traffic(host) for host in hosts]
        keys += [self._keys.traffic_rank(metric) for metric in RANK_METRICS]
        keys.append(self._keys.traffic_active)
        pipe = self._redis().pipeline(transaction=False)
        for key in keys:  # one key a command: keys of a Cluster live in many slots
            pipe.delete(key)
        with contextlib.suppress(*_UNREACHABLE):  # Redis gone: nothing to clean
            await pipe.execute()

    async def _crawl_exists(self) -> bool:
        try:
            return bool(await self._redis().exists(self._keys.meta))
        except _UNREACHABLE as exc:
            self._unreachable(exc)
            return False


def _host_key(url: str) -> str | None:
    """The host counters are kept under; None for URLs without one (``data:``)."""
    try:
        return host_of(url)
    except BadURLError:
        return None


def _is_robots(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"
