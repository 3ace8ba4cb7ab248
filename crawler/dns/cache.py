"""Where DNS answers are kept: this process' memory, and the crawl's Redis.

``LocalAnswers`` keeps the freshest DNSCACHE_SIZE answers of this process, so a
hot name costs no round trip. ``SharedAnswers`` keeps every answer in Redis
(``CrawlKeys.dns``) until it expires, for every node: the node that takes a
name's lock (``CrawlKeys.dns_lock``, SET NX with an expiry) asks DNS and writes
the answer while the others wait for it, so three nodes asking at once make one
query. If Redis is away the name is looked up directly: the crawl never stops
fetching because the cache is gone. An entry the crawler did not write (a key of
the wrong type, JSON it cannot read) is replaced, counted in ``dns/bad_entries``
and logged once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from redis.exceptions import LockError, ResponseError

from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.policy.dnsanswers import BadEntryError, decode_entry, encode_entry

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import redis.asyncio
    from redis.asyncio.lock import Lock

    from crawler.context.logonce import OnceLogger
    from crawler.context.outage import RedisGate
    from crawler.crawlstate.keys import CrawlKeys
    from crawler.policy.dnsanswers import Answer

logger = logging.getLogger(__name__)

# Seconds between two looks at a name that another node is asking DNS about.
POLL_INTERVAL = 0.05
# Seconds a name's lock outlives the longest lookup it guards (DNS_TIMEOUT).
LOCK_MARGIN = 1.0


class LocalAnswers:
    """This process' freshest answers, at most *size* of them (the least recently
    used go first)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._answers: OrderedDict[str, Answer] = OrderedDict()

    def get(self, name: str, now: float) -> Answer | None:
        """*name*'s answer if it is still fresh at *now*; a stale one is dropped."""
        answer = self._answers.get(name)
        if answer is None:
            return None
        if not answer.fresh(now):
            del self._answers[name]
            return None
        self._answers.move_to_end(name)
        return answer

    def put(self, name: str, answer: Answer) -> None:
        self._answers[name] = answer
        self._answers.move_to_end(name)
        while len(self._answers) > self._size:
            self._answers.popitem(last=False)


class SharedAnswers:
    """The crawl's answers in Redis, each name asked of DNS by one node at a time."""

    def __init__(
        self,
        client: Callable[[], redis.asyncio.Redis],
        keys: CrawlKeys,
        gate: RedisGate,
        once: OnceLogger,
        lookup_timeout: float,
    ) -> None:
        self._make_client = client
        self._redis: redis.asyncio.Redis | None = None
        self._keys = keys
        self._gate = gate
        self._once = once
        self._lock_timeout = lookup_timeout + LOCK_MARGIN

    async def answer(
        self, name: str, lookup: Callable[[], Awaitable[Answer]]
    ) -> tuple[Answer, bool]:
        """*name*'s fresh answer in Redis, else one *lookup* gets under the name's
        lock (written for the others); and whether *lookup* ran. While Redis is
        away, *lookup* answers directly."""
        if self._gate.ready(time.time()):
            try:
                found = await self._shared(name, lookup)
            except REDIS_ERRORS as exc:
                if not is_outage(exc):
                    raise
                self._gate.failed(exc, time.time())
            else:
                self._gate.succeeded()
                return found
        return await lookup(), True

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _shared(
        self, name: str, lookup: Callable[[], Awaitable[Answer]]
    ) -> tuple[Answer, bool]:
        """The answer in Redis, or this node's under the lock; after waiting as
        long as a lock lives for another node's answer, this node asks itself."""
        deadline = time.monotonic() + self._lock_timeout
        while True:
            found = await self._read(name)
            if found is not None:
                return found, False
            lock = self._client().lock(
                self._keys.dns_lock(name), timeout=self._lock_timeout
            )
            if await lock.acquire(blocking=False):
                try:
                    return await self._locked(name, lookup)
                finally:
                    await self._release(lock)
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_INTERVAL)
        answer = await lookup()
        await self._write(name, answer)
        return answer, True

    async def _locked(
        self, name: str, lookup: Callable[[], Awaitable[Answer]]
    ) -> tuple[Answer, bool]:
        found = await self._read(name)  # written while this node waited
        if found is not None:
            return found, False
        answer = await lookup()
        await self._write(name, answer)
        return answer, True

    async def _read(self, name: str) -> Answer | None:
        """*name*'s fresh answer in Redis, or None; state the crawler did not
        write is deleted (counted)."""
        key = self._keys.dns(name)
        try:
            data = await self._client().get(key)
        except ResponseError as exc:
            if is_outage(exc):
                raise
            await self._client().delete(key)
            self._bad_entry(f"{key} was not a string")
            return None
        if data is None:
            return None
        try:
            answer = decode_entry(data)
        except BadEntryError as exc:
            await self._client().delete(key)
            self._bad_entry(f"{key}: {exc}")
            return None
        return answer if answer.fresh(time.time()) else None

    async def _write(self, name: str, answer: Answer) -> None:
        """Share *answer* until it expires; Redis away: kept here only."""
        milliseconds = int((answer.expires - time.time()) * 1000)
        if milliseconds <= 0:
            return
        try:
            await self._client().set(
                self._keys.dns(name), encode_entry(answer), px=milliseconds
            )
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._gate.failed(exc, time.time())

    async def _release(self, lock: Lock) -> None:
        """Free the lock; one that expired, or that Redis is away to free, frees
        itself when its timeout ends."""
        try:
            await lock.release()
        except LockError:
            return
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._gate.failed(exc, time.time())

    def _bad_entry(self, what: str) -> None:
        self._once.event(
            "dns/bad_entries",
            "Replaced a DNS answer in Redis the crawler did not write (%(what)s); "
            "further ones are only counted in dns/bad_entries",
            {"what": what},
        )

    def _client(self) -> redis.asyncio.Redis:
        if self._redis is None:  # made on first use: no I/O at start-up
            self._redis = self._make_client()
        return self._redis
