"""RenderAdvisor: whether a request is rendered, in ``RENDER_MODE = auto``.

One per crawler (``advisor_of``). Decisions live in Redis, one hash per host
(``CrawlKeys.render``), shared by the cluster and deleted with the crawl's keys; this
process keeps a copy of each host's hash, read again every ``REFRESH_SECONDS`` (in
the background for a decided host: a decided request never waits on Redis) and at
once on its own samples. An undecided host takes samples: a sample slot is claimed
by a Lua script, so at most RENDER_SAMPLE_PAGES are out at once across the cluster.
The rules are pure functions in ``crawler.render.adaptive``; this module is their
I/O. While Redis is away requests are answered from the copy (static when
undecided) and outcomes wait for Redis (``patiently``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from redis.exceptions import ResponseError
from scrapy import signals

from crawler import meta
from crawler.addon import Frontier
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.outage import REDIS_ERRORS, is_outage, patiently
from crawler.policy.hosts import BadURLError
from crawler.render.adaptive import (
    HOST,
    DecisionKey,
    HostRecord,
    LevelRecord,
    after_outcome,
    deciding_level,
    key_of,
    level_fields,
    read_host,
    sample_pays,
    verdict,
    write_level,
)
from crawler.render.config import RenderConfig

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import redis.asyncio
    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.render.adaptive import Change

logger = logging.getLogger(__name__)

# Seconds a host's copy is trusted before it is read again from Redis.
REFRESH_SECONDS = 5.0
# Seconds after which sample claims with no outcome are given again (their static
# or rendered fetch failed, or the node fetching them died).
CLAIM_SECONDS = 300.0
# Hosts whose copy this process keeps (least recently used ones are dropped).
CACHE_SIZE = 65536
# Set on a sample by the advisor, read back by it: the [host, level] its slot was
# claimed at (to give it back if the page cannot be compared).
SAMPLE_LEVEL = "render_sample_level"

CLAIM = """
-- KEYS: [1] the host's render hash
-- ARGV: [1] level ('' the host, or a URL pattern), [2] RENDER_SAMPLE_PAGES,
--       [3] now (s), [4] CLAIM_SECONDS, [5] RENDER_RECHECK_INTERVAL (s, 0 never)
-- returns: {1 if a sample was granted else 0, the hash (HGETALL)}
local level, now = ARGV[1], tonumber(ARGV[3])
local function number(name)
  local value = tonumber(redis.call('HGET', KEYS[1], name .. ':' .. level))
  if value == nil or value ~= value or value < 0 or value > 1e12 then return 0 end
  return value
end
local granted = 0
local decision = redis.call('HGET', KEYS[1], 'decision:' .. level)
if decision == 'render' or decision == 'static' then
  local interval = tonumber(ARGV[5])
  if interval > 0 and now - number('decided_at') >= interval then
    redis.call('HSET', KEYS[1], 'decided_at:' .. level, ARGV[3])
    granted = 1
  end
elseif decision ~= 'mixed' then
  local pages, done = tonumber(ARGV[2]), number('paid') + number('static')
  local taken = math.max(number('claimed'), done)
  if taken >= pages and done < pages
      and now - number('claimed_at') >= tonumber(ARGV[4]) then
    taken = done
  end
  if taken < pages then
    redis.call('HSET', KEYS[1], 'claimed:' .. level, taken + 1,
      'claimed_at:' .. level, ARGV[3])
    granted = 1
  end
end
return {granted, redis.call('HGETALL', KEYS[1])}
"""

RECORD = """
-- KEYS: [1] the host's render hash
-- ARGV: [1] 'paid' or 'static', [2] links gained, [3...] levels to count it in
-- returns: the hash (HGETALL)
for i = 3, #ARGV do
  for _, name in ipairs({ARGV[1], 'links'}) do
    local field = name .. ':' .. ARGV[i]
    local value = tonumber(redis.call('HGET', KEYS[1], field))
    if value == nil or value ~= value or value < 0 or value > 1e12 then value = 0 end
    local add = 1
    if name == 'links' then add = tonumber(ARGV[2]) end
    redis.call('HSET', KEYS[1], field, value + add)
  end
end
return redis.call('HGETALL', KEYS[1])
"""

RELEASE = """
-- KEYS: [1] the host's render hash
-- ARGV: [1] level whose claim is given back
-- returns: the claims left
local field = 'claimed:' .. ARGV[1]
local value = tonumber(redis.call('HGET', KEYS[1], field))
if value == nil or value ~= value or value < 1 or value > 1e12 then return 0 end
redis.call('HSET', KEYS[1], field, value - 1)
return value - 1
"""
SCRIPTS = {"claim": CLAIM, "record": RECORD, "release": RELEASE}

_ADVISORS: WeakKeyDictionary[Crawler, RenderAdvisor] = WeakKeyDictionary()


def advisor_of(crawler: Crawler) -> RenderAdvisor:
    """The crawler's advisor, made on first use."""
    advisor = _ADVISORS.get(crawler)
    if advisor is None:
        advisor = _ADVISORS[crawler] = RenderAdvisor.from_crawler(crawler)
    return advisor


class RenderAdvisor:
    """Learns, per host and URL pattern, whether rendering pays (see the module)."""

    def __init__(
        self,
        crawler: Crawler,
        config: RenderConfig,
        keys: CrawlKeys,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._keys = keys
        self._clock = clock
        self._gate = Frontier.of(crawler).outage.gate("the render advisor")
        self._client: redis.asyncio.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._hosts: OrderedDict[str, tuple[HostRecord, float]] = OrderedDict()
        self._reading: dict[str, asyncio.Future[HostRecord | None]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._bad_logged = False
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderAdvisor:
        """Raises ``BadRenderSetting`` on a bad ``RENDER_*`` setting."""
        name = crawler.spidercls.name
        keys = CrawlKeys.of(crawler.settings, name)
        return cls(crawler, RenderConfig.from_settings(crawler.settings), keys)

    # --- deciding ------------------------------------------------------------------

    def wants_render(self, request: Request) -> bool | Awaitable[bool]:
        """True to render *request*, False to fetch it statically (then, if it is
        picked as a sample, with ``meta[RENDER_SAMPLE]``); an awaitable when Redis
        must be asked (a host not known yet, or a sample to claim)."""
        if request.meta.get(meta.RENDER_STATIC):
            return True  # the rendered fetch of a sample
        if request.meta.get(meta.RENDER_SAMPLE) or request.meta.get(meta.ROBOTS_FETCH):
            return False
        try:
            key = key_of(request.url)
        except BadURLError:
            return False
        cached = self._hosts.get(key.host)
        if cached is None:
            return self._read_then_decide(request, key)
        return self._from_copy(request, key, *cached)

    def _from_copy(
        self, request: Request, key: DecisionKey, record: HostRecord, read_at: float
    ) -> bool | Awaitable[bool]:
        """The answer from this process's copy of the host: at once for a decided
        key (read again in the background when old), Redis asked for a sample."""
        self._hosts.move_to_end(key.host)
        answer = self._verdict(record, key)
        old = self._clock() - read_at >= REFRESH_SECONDS
        if answer == "sample":
            if old:
                return self._read_then_decide(request, key)
            return self._claim(request, key, record)
        if old:
            self._in_background(self._read(key.host))
        return answer == "render"

    def _verdict(self, record: HostRecord, key: DecisionKey) -> str:
        return verdict(
            record,
            key.pattern,
            now=self._clock(),
            config=self._config,
            claim_seconds=CLAIM_SECONDS,
        )

    async def _read_then_decide(self, request: Request, key: DecisionKey) -> bool:
        record = await self._read(key.host)
        if record is None:  # Redis away: static, unless a copy says otherwise
            cached = self._hosts.get(key.host)
            return cached is not None and self._verdict(cached[0], key) == "render"
        answer = self._verdict(record, key)
        if answer == "sample":
            return await self._claim(request, key, record)
        return answer == "render"

    async def _claim(
        self, request: Request, key: DecisionKey, record: HostRecord
    ) -> bool:
        """Ask Redis for a sample at the level deciding *key*; the request becomes
        one if granted (fetched statically now, rendered next); else the decision
        as Redis has it."""
        level = deciding_level(record, key.pattern)
        args = [level, self._config.sample_pages, f"{self._clock():.3f}"]
        args += [CLAIM_SECONDS, self._config.recheck_interval]
        reply = await self._call(key.host, "claim", args)
        if reply is None:
            return False
        granted, hash_fields = reply
        record = self._store(key.host, _pairs(hash_fields))
        if granted:
            request.meta[meta.RENDER_SAMPLE] = True
            if record.level(level).decision is None:  # a slot, not a re-check
                request.meta[SAMPLE_LEVEL] = [key.host, level]
            return False
        answer = self._verdict(record, key)
        return answer == "render"

    # --- reading -------------------------------------------------------------------

    async def _read(self, host: str) -> HostRecord | None:
        """The host's record from Redis (one read at a time per host), or None when
        Redis is away."""
        if (reading := self._reading.get(host)) is not None:
            return await asyncio.shield(reading)
        future: asyncio.Future[HostRecord | None] = (
            asyncio.get_running_loop().create_future()
        )
        self._reading[host] = future
        try:
            record = None
            if self._gate.ready(time.time()):
                hash_fields = await self._call(host, "read", [])
                if hash_fields is not None:
                    record = self._store(host, hash_fields)
            future.set_result(record)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            del self._reading[host]
        return record

    def _store(self, host: str, hash_fields: dict[bytes, bytes]) -> HostRecord:
        record, bad = read_host(hash_fields)
        if bad:
            self._bad_state(
                bad, f"{bad} unreadable fields in {self._keys.render(host)}"
            )
        self._hosts[host] = (record, self._clock())
        self._hosts.move_to_end(host)
        while len(self._hosts) > CACHE_SIZE:
            self._hosts.popitem(last=False)
        return record

    async def _call(self, host: str, what: str, args: list[Any]) -> Any:
        """One round trip (``read``: HGETALL; ``claim``, ``record``: a script), or
        None if Redis is away or refuses (counted; the caller answers without it).
        A key of the wrong type is deleted (counted) and the call made once more."""
        key = self._keys.render(host)
        for attempt in range(2):
            try:
                return await self._send(key, what, args)
            except ResponseError as exc:
                if attempt == 0 and "WRONGTYPE" in str(exc) and not is_outage(exc):
                    await self._client_().delete(key)
                    self._bad_state(1, f"{key} was not a hash: deleted")
                    continue
                self._refused(exc)
                return None
            except REDIS_ERRORS as exc:
                if not is_outage(exc):
                    self._refused(exc)
                    return None
                self._gate.failed(exc, time.time())
                return None
        return None

    async def _send(self, key: str, what: str, args: list[Any]) -> Any:
        client = self._client_()
        if what == "read":
            result = await client.hgetall(key)
        else:
            if what not in self._scripts:
                self._scripts[what] = client.register_script(SCRIPTS[what])
            result = await self._scripts[what](keys=[key], args=args)
        self._gate.succeeded()
        return result

    def _client_(self) -> redis.asyncio.Redis:
        if self._client is None:  # made on first use: no I/O at start-up
            self._client = Frontier.of(self._crawler).redis.async_client()
        return self._client

    # --- learning ------------------------------------------------------------------

    async def record_sample(
        self, url: str, *, gained_links: int, gained_text: float
    ) -> None:
        """Count one sample's outcome for its host and pattern, and decide the
        levels it completes. Waits while Redis is away."""
        try:
            key = key_of(url)
        except BadURLError:
            return
        pays = sample_pays(
            self._config, gained_links=gained_links, gained_text=gained_text
        )
        if not pays:
            self._stats.inc_value("render/static_enough")
        args = ["paid" if pays else "static", gained_links, HOST, key.pattern]
        hash_fields = await self._patiently(key.host, "record", args)
        if hash_fields is None:
            return
        record = self._store(key.host, _pairs(hash_fields))
        await self._settle(key, record)

    async def release(self, request: Request) -> None:
        """Give back the sample slot of *request*, a sample that cannot be compared
        (not an HTML page): another page of its host is sampled instead."""
        claimed = request.meta.get(SAMPLE_LEVEL)
        if not (isinstance(claimed, list) and len(claimed) == 2):
            return  # a re-check: nothing to give back
        host, level = (str(part) for part in claimed)
        await self._patiently(host, "release", [level])
        self._hosts.pop(host, None)

    async def _settle(self, key: DecisionKey, record: HostRecord) -> None:
        """Write what the new outcome makes of the host's and pattern's levels."""
        now = self._clock()
        changes: list[tuple[str, Change, LevelRecord]] = []
        for level in (HOST, key.pattern):
            current = record.level(level)
            found = after_outcome(
                current, level=level, now=now, pages=self._config.sample_pages
            )
            if found is not None:
                changes.append((level, *found))
        if not changes:
            return
        await self._patiently(key.host, "settle", changes)
        self._hosts.pop(key.host, None)  # read again on its next request
        # A pattern's decision is kept from the first, but it applies (and is
        # worth a line) only once its host is mixed.
        mixed = record.level(HOST).decision == "mixed" or any(
            level == HOST and new.decision == "mixed" for level, _, new in changes
        )
        for level, change, level_record in changes:
            if level == HOST or mixed:
                seen = record.level(level)
                _log_change(key.host, level, change, level_record, seen)

    async def _patiently(self, host: str, what: str, args: Any) -> Any:
        """A write that waits for Redis (an outcome must not be lost)."""
        key = self._keys.render(host)

        async def write() -> Any:
            if what == "settle":
                pipe = self._client_().pipeline(transaction=False)
                for level, change, level_record in args:
                    if change == "reset":
                        pipe.hdel(key, *level_fields(level))
                    else:
                        fields = _decision_fields(level_record, level)
                        pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
                return await pipe.execute()
            return await self._send(key, what, args)

        try:
            return await patiently(self._gate, write)
        except ResponseError as exc:
            if "WRONGTYPE" in str(exc):
                await self._client_().delete(key)
                self._bad_state(1, f"{key} was not a hash: deleted")
                return await patiently(self._gate, write)
            self._refused(exc)
        except REDIS_ERRORS as exc:  # not an outage: patiently waits those out
            self._refused(exc)
        return None

    # --- bookkeeping ---------------------------------------------------------------

    def _in_background(self, call: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(call)
        self._tasks.add(task)  # kept until done: the loop holds tasks weakly
        task.add_done_callback(self._tasks.discard)

    def _bad_state(self, count: int, what: str) -> None:
        self._stats.inc_value("render/bad_state", count)
        if not self._bad_logged:
            self._bad_logged = True
            logger.warning(
                "Ignored render state the crawler did not write (%(what)s); further "
                "ones are only counted in render/bad_state",
                {"what": what},
                extra={"spider": self._crawler.spider},
            )

    def _refused(self, error: BaseException) -> None:
        """A command Redis refused for another reason than an outage: the request
        is fetched statically, the outcome dropped; counted, logged once."""
        self._bad_state(1, f"Redis refused a command: {error}")

    async def close(self) -> None:
        """Stop background reads; close the client."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _pairs(reply: Any) -> dict[bytes, bytes]:
    """A hash from a script's flat HGETALL reply."""
    if isinstance(reply, dict):
        return reply
    items = list(reply)
    return dict(zip(items[::2], items[1::2], strict=False))


def _decision_fields(record: LevelRecord, level: str) -> dict[str, str]:
    """Only the decision's fields: counters other nodes increment stay theirs."""
    names = ("decision", "decided_at", "decided_paid", "decided_static")
    written = write_level(record, level)
    return {f"{name}:{level}": written[f"{name}:{level}"] for name in names}


def _log_change(
    host: str, level: str, change: Change, decided: LevelRecord, seen: LevelRecord
) -> None:
    where = f"host {host}" if level == HOST else f"{host} pattern {level}"
    if change == "reset":
        logger.info(
            "Re-check of %(where)s disagrees with its decision: sampling it again",
            {"where": where},
        )
    elif decided.decision == "render":
        logger.info(
            "Rendering %(where)s: %(samples)d samples found %(links)d links static "
            "fetches missed",
            {"where": where, "samples": seen.samples, "links": seen.links},
        )
    elif decided.decision == "static":
        logger.info(
            "%(where)s is static enough (%(samples)d samples)",
            {"where": where[0].upper() + where[1:], "samples": seen.samples},
        )
    else:
        logger.info(
            "Host %(host)s mixes pages rendering helps with and pages it does not "
            "(%(paid)d of %(samples)d samples paid): deciding per URL pattern",
            {"host": host, "paid": seen.paid, "samples": seen.samples},
        )
