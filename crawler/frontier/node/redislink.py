"""The frontier's way to Redis on this node, and waking the engine to try again.

One gate serves the pops, the round trip's writes and the heartbeat: a failure any
of them meets makes all of them wait the same backoff, and the engine is woken when
the wait is over. Kept apart from the heartbeat (``runtime``) so that the round trip
(``crawler.frontier.exchange``) uses it without knowing the heartbeat: when Redis
answers again after an outage, the link calls the *on_back* it was built with (its
owner's catch-up heartbeat).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later

from crawler.context.enginehooks import wake_engine
from crawler.context.outage import REDIS_ERRORS, is_outage

if TYPE_CHECKING:
    from collections.abc import Callable

    import redis
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from crawler.context.outage import RedisGate


class RedisLink:
    """Whether to go to Redis now, what a failure means, and when to wake the engine."""

    def __init__(
        self,
        crawler: Crawler,
        gate: RedisGate,
        client: redis.Redis,
        on_back: Callable[[], None],
    ) -> None:
        self._crawler = crawler
        self._gate = gate
        self._client = client
        self._on_back = on_back
        self._wake: CallLaterResult | None = None
        self._catch_up: CallLaterResult | None = None  # on_back, after an outage

    @property
    def retry_at(self) -> float:
        """When a caller may try Redis again (epoch seconds)."""
        return self._gate.retry_at

    def answering(self, now: float) -> bool:
        """Whether Redis answered the last call and may be asked at *now*: a read
        that is only a figure (``len()``) is not worth a PING."""
        return self._gate.ready(now) and not self._gate.failing

    def usable(self, now: float) -> bool:
        """Whether to go to Redis at *now*: yes while it answers; after a failure,
        once the gate's wait is over and Redis answers a PING. (A call that found
        nothing to send would prove nothing, and end no outage.)"""
        if not self._gate.ready(now):
            return False
        if not self._gate.failing:
            return True
        try:
            self._client.ping()
        except REDIS_ERRORS as exc:
            self.failed(exc, now)
            return False
        self.answered()
        return True

    def failed(self, error: Exception, now: float) -> None:
        """Wait out *error* if it says Redis is away (else raise it): no request
        until the gate's delay is over, then the engine is woken to try again."""
        if not is_outage(error):
            raise error
        self.wake_at(self._gate.failed(error, now), now)

    def answered(self, *, maintained: bool = False) -> None:
        """Redis answered a round trip: after an outage, *on_back* runs at once
        (unless the heartbeat just did, *maintained*), so this node re-claims its
        shards and requeues expired leases."""
        if self._gate.succeeded() and not maintained:
            self._catch_up = call_later(0, self._on_back)

    def wake_at(self, wake: float, now: float) -> None:
        """Wake the engine at *wake* (epoch seconds), replacing any earlier plan."""
        if self._wake is not None:
            self._wake.cancel()
        self._wake = call_later(max(0.0, wake - now), self.wake_engine)

    def wake_engine(self) -> None:
        wake_engine(self._crawler)

    def stop(self) -> None:
        """No more wake-ups or catch-up rounds."""
        for timer in (self._wake, self._catch_up):
            if timer is not None:
                timer.cancel()
