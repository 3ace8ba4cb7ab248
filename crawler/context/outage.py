"""Redis going away and coming back: one tracker per crawl, one backoff per caller.

Every component that talks to Redis reports each failure it rides out
(``is_outage``) and each success to the crawl's ``RedisOutage``, so the operator
reads one WARNING when Redis becomes unreachable and one INFO, with how long it
lasted, when it answers again, whichever component noticed first. While Redis is
away a component keeps its work in memory and tries again after its ``Backoff``
delay (at once, then 0.5 s doubling up to 5 s): no busy loop, no sleep on the
reactor thread. A single failed call (a connection the server closed) that
succeeds when tried again at once is counted, not reported as an outage.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING, TypeVar

from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import (
    ClusterError,
    ConnectionError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    ResponseError,
    TimeoutError,
    TryAgainError,
)
from redis.retry import Retry

from crawler.crawlstate.connection import RedisUnreachableError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import redis
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# While Redis keeps failing (after one try again at once): the first wait between
# two tries, and the longest; the wait doubles in between.
FIRST_DELAY = 0.5
MOST_DELAY = 5.0
# Errors that say the server is away, restarting or failing over, not that a
# command is wrong. ConnectionError covers BusyLoadingError (LOADING),
# ClusterError covers ClusterDownError and MasterDownError (MASTERDOWN);
# RedisUnreachableError is a client made while Redis is away.
_AWAY = (
    ConnectionError,
    TimeoutError,
    ClusterError,
    TryAgainError,
    ReadOnlyError,
    RedisUnreachableError,
)
# Replies that say the same when they come back as a plain ResponseError (from a
# pipeline or a script): a restarting server, a replica, a failover.
_AWAY_REPLIES = ("LOADING", "MASTERDOWN", "READONLY", "CLUSTERDOWN", "TRYAGAIN")

# What a call to Redis may raise; ``is_outage`` tells which of these to wait out.
REDIS_ERRORS = (RedisError, RedisClusterException, RedisUnreachableError)

T = TypeVar("T")


def is_outage(error: BaseException) -> bool:
    """Whether *error* is one to wait out: Redis away, loading, or failing over."""
    if isinstance(error, _AWAY):
        return True
    if isinstance(error, ResponseError):
        return str(error).startswith(_AWAY_REPLIES)
    # redis-py's Cluster client, when no node of the cluster answers.
    return isinstance(error, RedisClusterException) and "connect" in str(error)


def reactor_retry() -> Retry:
    """The retry policy of a blocking client used on the reactor thread: one new
    connection at once (a connection the server closed), never a sleep; a longer
    wait is the caller's ``Backoff``."""
    return Retry(NoBackoff(), 1)


def use_reactor_retry(client: redis.Redis) -> None:
    """Give *client* ``reactor_retry`` if it is a single server's. A Cluster client
    keeps redis-py's own retries: they find the cluster's new layout after a
    failover."""
    if not isinstance(client, RedisCluster):
        client.set_retry(reactor_retry())


class Backoff:
    """When one caller may try Redis again: at once after a first failure (a
    connection the server closed is opened again), then after FIRST_DELAY,
    doubling up to MOST_DELAY, while it keeps failing."""

    def __init__(self) -> None:
        self.retry_at = 0.0
        self.failures = 0

    def ready(self, now: float) -> bool:
        return now >= self.retry_at

    def failed(self, now: float) -> float:
        """Note a failure at *now*; when to try again."""
        delay = 0.0
        if self.failures:
            delay = min(FIRST_DELAY * 2 ** (self.failures - 1), MOST_DELAY)
        self.failures += 1
        self.retry_at = now + delay
        return self.retry_at

    def succeeded(self) -> bool:
        """Note a success; whether it ended a run of failures."""
        ended = self.failures > 0
        self.failures, self.retry_at = 0, 0.0
        return ended


class RedisGate:
    """One caller's way to Redis: its own ``Backoff``, reporting to the crawl's
    tracker under the caller's name."""

    def __init__(self, outage: RedisOutage, where: str) -> None:
        self.outage = outage
        self.where = where
        self.backoff = Backoff()

    @property
    def retry_at(self) -> float:
        return self.backoff.retry_at

    @property
    def failing(self) -> bool:
        """Whether this caller's last call to Redis failed."""
        return self.backoff.failures > 0

    def ready(self, now: float) -> bool:
        """Whether to try Redis at *now*: it answered last, or the wait is over."""
        return self.backoff.ready(now)

    def failed(self, error: BaseException, now: float) -> float:
        """Note *error* (``is_outage``); when to try again. A first failure is
        tried again at once: only a second one in a row says Redis is away."""
        self.outage.failed(error, self.where, away=self.backoff.failures > 0)
        return self.backoff.failed(now)

    def succeeded(self) -> bool:
        """Note that Redis answered a call (only after a real round trip: this may
        end the outage); whether this caller had been failing."""
        self.outage.succeeded()
        return self.backoff.succeeded()


class RedisOutage:
    """The crawl's view of its Redis: up, or away since when. Logs each change once."""

    def __init__(self, stats: StatsCollector) -> None:
        self._stats = stats
        self.down_since: float | None = None
        self._errors = 0

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def gate(self, where: str) -> RedisGate:
        """A new caller's gate, named *where* in the log line."""
        return RedisGate(self, where)

    def failed(self, error: BaseException, where: str, *, away: bool = True) -> None:
        """A call to Redis failed with *error* (``is_outage``) in component *where*;
        *away*: and Redis is taken to be away (else it is only counted)."""
        self._stats.inc_value("redis/errors")
        if self.down_since is not None:
            self._errors += 1
            return
        if not away:
            return
        self.down_since, self._errors = time.monotonic(), 1
        self._stats.inc_value("redis/outages")
        logger.warning(
            "Redis is unreachable (%(error)s, in %(where)s): the crawl waits for it, "
            "keeping its in-flight requests and unwritten work, and resumes when it "
            "answers",
            {"error": _one_line(error), "where": where},
        )

    def succeeded(self) -> None:
        """A call to Redis succeeded: if Redis was away, it is back."""
        if self.down_since is None:
            return
        seconds = time.monotonic() - self.down_since
        self.down_since = None
        self._stats.inc_value("redis/outage_seconds", math.ceil(seconds))
        logger.info(
            "Redis answers again after %(seconds).1fs away (%(errors)d calls failed "
            "meanwhile): the crawl resumes",
            {"seconds": seconds, "errors": self._errors},
        )


async def patiently(gate: RedisGate, call: Callable[[], Awaitable[T]]) -> T:
    """Await *call* until Redis answers it. While Redis is away the caller waits,
    the gate's delay between two tries; any other error is raised."""
    while True:
        if (wait := gate.retry_at - time.time()) > 0:
            await asyncio.sleep(wait)
        try:
            result = await call()
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            gate.failed(exc, time.time())
            continue
        gate.succeeded()
        return result


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:300]
