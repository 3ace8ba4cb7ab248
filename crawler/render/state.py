"""What RENDER_MODE=auto learnt, in Redis: one hash per host, and the scripts on it.

``CrawlKeys.render(host)`` holds the host's levels (``crawler.render.levels``);
``CrawlKeys.render_parked(host)`` the pages fetched statically while the host was
undecided, to render if the decision says so. Both carry the host as their hash
tag, so a script may read both on a Redis Cluster. Every call is one round trip; the
scripts are ``crawler.render.statescripts``'.

Reads (``read``, ``claim``, ``park``) answer None while Redis is away: a request is
never held up for a decision. Writes (``record``, ``release``, ``settle``, ``take``)
wait for Redis: a sample's outcome is not lost. A key of the wrong type is deleted
(counted, as any state the crawler did not write) and the call made again.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS, is_outage, patiently
from crawler.render.levels import level_fields, write_level
from crawler.render.statescripts import SCRIPTS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    import redis.asyncio
    from scrapy.crawler import Crawler

    from crawler.crawlstate.keys import CrawlKeys
    from crawler.render.adaptive import Change
    from crawler.render.levels import LevelRecord

logger = logging.getLogger(__name__)

# The scripts that read or write the parked pages too.
_TWO_KEYS = frozenset({"park"})


class RenderState:
    """The crawl's render hashes in Redis (see the module)."""

    def __init__(self, crawler: Crawler, keys: CrawlKeys) -> None:
        self._crawler = crawler
        self._keys = keys
        self.gate = CrawlContext.of(crawler).outage.gate("the render advisor")
        self._client: redis.asyncio.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._once = OnceLogger(logger, crawler)

    # --- reads: None while Redis is away ---------------------------------------------

    async def read(self, host: str) -> dict[bytes, bytes] | None:
        return await self._now(host, lambda: self._redis().hgetall(self._key(host)))  # type: ignore[no-any-return]

    async def claim(self, host: str, args: Sequence[object]) -> tuple[bool, Any] | None:
        reply = await self._now(host, lambda: self._script("claim", host, args))
        if reply is None:
            return None
        return bool(reply[0]), _pairs(reply[1])

    async def park(self, host: str, args: Sequence[object]) -> str | None:
        reply = await self._now(host, lambda: self._script("park", host, args))
        return reply.decode() if isinstance(reply, bytes) else reply

    # --- writes: they wait for Redis ---------------------------------------------------

    async def record(self, host: str, args: Sequence[object]) -> dict[bytes, bytes]:
        reply = await self._patiently(host, lambda: self._script("record", host, args))
        return _pairs(reply)

    async def release(self, host: str, level: str) -> None:
        await self._patiently(host, lambda: self._script("release", host, [level]))

    async def take(self, host: str, patterns: Sequence[str]) -> list[bytes]:
        """The parked pages of *patterns*, deleted."""
        if not patterns:
            return []
        key = self._keys.render_parked(host)

        def call() -> Awaitable[Any]:
            return self._scripts_of("take")(keys=[key], args=list(patterns))  # type: ignore[no-any-return]

        return list(await self._patiently(host, call) or [])

    async def settle(
        self, host: str, changes: Sequence[tuple[str, Change, LevelRecord]]
    ) -> None:
        """Write decisions (only their fields: other nodes increment the counters)
        and resets."""
        key = self._key(host)

        async def call() -> Any:
            pipe = self._redis().pipeline(transaction=False)
            for level, change, record in changes:
                if change == "reset":
                    pipe.hdel(key, *level_fields(level))
                else:
                    pipe.hset(key, mapping=_decision_fields(record, level))  # type: ignore[arg-type]
            return await pipe.execute()

        await self._patiently(host, call)

    # --- the way to Redis ----------------------------------------------------------

    def _key(self, host: str) -> str:
        return self._keys.render(host)

    def _script(self, name: str, host: str, args: Sequence[object]) -> Awaitable[Any]:
        keys = [self._key(host)]
        if name in _TWO_KEYS:
            keys.append(self._keys.render_parked(host))
        return self._scripts_of(name)(keys=keys, args=list(args))  # type: ignore[no-any-return]

    def _scripts_of(self, name: str) -> Any:
        if name not in self._scripts:
            self._scripts[name] = self._redis().register_script(SCRIPTS[name])
        return self._scripts[name]

    def _redis(self) -> redis.asyncio.Redis:
        if self._client is None:  # made on first use: no I/O at start-up
            self._client = CrawlContext.of(self._crawler).redis.async_client()
        return self._client

    async def _now(self, host: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """*call* once (twice if a key had the wrong type), or None if Redis is away
        or refuses it (counted)."""
        if not self.gate.ready(time.time()):
            return None
        for attempt in range(2):
            try:
                result = await call()
            except REDIS_ERRORS as exc:
                if is_outage(exc):
                    self.gate.failed(exc, time.time())
                    return None
                if attempt == 0 and await self._repaired(host, exc):
                    continue
                self.bad(1, f"Redis refused a command: {exc}")
                return None
            self.gate.succeeded()
            return result
        return None

    async def _patiently(self, host: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """*call* once Redis answers (waiting while it is away); None if it refuses
        it (counted)."""
        for attempt in range(2):
            try:
                return await patiently(self.gate, call)
            except REDIS_ERRORS as exc:
                if attempt == 0 and await self._repaired(host, exc):
                    continue
                self.bad(1, f"Redis refused a command: {exc}")
                return None
        return None

    async def _repaired(self, host: str, error: BaseException) -> bool:
        """Delete the host's keys that are not hashes, if *error* says some are;
        whether any was."""
        if not (isinstance(error, ResponseError) and "WRONGTYPE" in str(error)):
            return False
        repaired = False
        for key in (self._key(host), self._keys.render_parked(host)):
            kind = await self._redis().type(key)
            if kind not in (b"hash", b"none", "hash", "none"):
                await self._redis().delete(key)
                self.bad(1, f"{key} was a {kind!r}, not a hash: deleted")
                repaired = True
        return repaired

    def bad(self, count: int, what: str) -> None:
        """Count state the crawler did not write (or a refused command); log once."""
        self._once.event(
            "render/bad_state",
            "Ignored render state the crawler did not write (%(what)s); further "
            "ones are only counted in render/bad_state",
            {"what": what},
            count=count,
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _pairs(reply: Any) -> dict[bytes, bytes]:
    """A hash from a script's flat HGETALL reply."""
    if isinstance(reply, dict):
        return reply
    items = list(reply or [])
    return dict(zip(items[::2], items[1::2], strict=False))


def _decision_fields(record: LevelRecord, level: str) -> dict[str, str]:
    names = ("decision", "decided_at", "decided_paid", "decided_static")
    written = write_level(record, level)
    return {f"{name}:{level}": written[f"{name}:{level}"] for name in names}
