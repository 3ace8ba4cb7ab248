"""RenderAdvisor: whether a request is rendered, in ``RENDER_MODE = auto``.

One per crawler (``advisor_of``). Decisions live in Redis (``crawler.render.state``),
shared by the cluster and deleted with the crawl's keys; this process keeps a copy of
each host's hash, read again every ``REFRESH_SECONDS`` (in the background for a
decided host: a decided request never waits on Redis) and at once on its own
samples. An undecided host takes samples: a sample slot is claimed by a Lua script,
so at most RENDER_SAMPLE_PAGES are out at once across the cluster; a sample is
rendered, keeping the static document its host served, and compared by
``crawler.render.sampler``. What the comparison teaches (the outcomes counted, the
decisions made, the pages parked until their host is decided) is the advisor's
learner's (``crawler.render.learning``): the advisor answers requests from its copy
and hands samples' outcomes and parked pages on. The rules are pure functions in
``crawler.render.adaptive``; this module and the learner are their I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals

from crawler import meta
from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.hosts import BadURLError
from crawler.render.adaptive import deciding_level, undecided, verdict
from crawler.render.config import RenderConfig
from crawler.render.learning import RenderLearner
from crawler.render.levels import HOST, key_of, pattern_of, read_host
from crawler.render.state import RenderState

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.render.levels import DecisionKey, HostRecord

# Seconds a host's copy is trusted before it is read again from Redis.
REFRESH_SECONDS = 5.0
# Seconds after which sample claims with no outcome are given again (their static
# or rendered fetch failed, or the node fetching them died).
CLAIM_SECONDS = 120.0
# Hosts whose copy this process keeps (least recently used ones are dropped).
CACHE_SIZE = 65536
# Set by the advisor, read back by it through the sampler. On a sample: the [host,
# level] its slot was claimed at (to give it back if the page cannot be compared).
SAMPLE_LEVEL = "render_sample_level"
# On a page fetched statically while its host was undecided: parked for the decision.
UNDECIDED = "render_undecided"

_ADVISORS: WeakKeyDictionary[Crawler, RenderAdvisor] = WeakKeyDictionary()


def advisor_of(crawler: Crawler) -> RenderAdvisor:
    """The crawler's advisor, made on first use."""
    advisor = _ADVISORS.get(crawler)
    if advisor is None:
        advisor = _ADVISORS[crawler] = RenderAdvisor.from_crawler(crawler)
    return advisor


class RenderAdvisor:
    """Answers, per host and URL pattern, whether to render: from the node's copy of
    what its learner decided, or by claiming a sample (see the module)."""

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
        self._clock = clock
        self._state = RenderState(crawler, keys)
        self._hosts: OrderedDict[str, tuple[HostRecord, float]] = OrderedDict()
        self._reading: dict[str, asyncio.Future[HostRecord | None]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._learner = RenderLearner(
            crawler,
            config,
            self._state,
            stats=self._stats,
            clock=clock,
            store=self._store,
            forget=self._forget,
        )
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderAdvisor:
        """Raises ``BadRenderSetting`` on a bad ``RENDER_*`` setting."""
        keys = CrawlKeys.of(crawler.settings, crawler.spidercls.name)
        return cls(crawler, RenderConfig.from_settings(crawler.settings), keys)

    # --- deciding ------------------------------------------------------------------

    def wants_render(self, request: Request) -> bool | Awaitable[bool]:
        """True to render *request*, False to fetch it statically; an awaitable
        when Redis must be asked (a host not known yet, or a sample to claim). A
        sample is rendered, keeping its page's static document to compare
        (``meta[RENDER_SAMPLE]``, ``meta[RENDER_KEEP_STATIC]``)."""
        if request.meta.get(meta.RENDER_SAMPLE):
            return True  # a sample tried again: still a sample
        if request.meta.get(meta.ROBOTS_FETCH):
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
        return self._answer(request, record, key, answer)

    def _verdict(self, record: HostRecord, key: DecisionKey) -> str:
        return verdict(
            record,
            key.pattern,
            now=self._clock(),
            config=self._config,
            claim_seconds=CLAIM_SECONDS,
        )

    def _answer(
        self, request: Request, record: HostRecord, key: DecisionKey, answer: str
    ) -> bool:
        """*answer* as a boolean; a static fetch that waits for a decision is
        marked, to be parked for it."""
        if answer == "static" and undecided(record, key.pattern):
            request.meta[UNDECIDED] = True
        else:
            request.meta.pop(UNDECIDED, None)
        return answer == "render"

    async def _read_then_decide(self, request: Request, key: DecisionKey) -> bool:
        record = await self._read(key.host)
        if record is None:  # Redis away: static, unless a copy says otherwise
            cached = self._hosts.get(key.host)
            return cached is not None and self._verdict(cached[0], key) == "render"
        answer = self._verdict(record, key)
        if answer == "sample":
            return await self._claim(request, key, record)
        return self._answer(request, record, key, answer)

    async def _claim(
        self, request: Request, key: DecisionKey, record: HostRecord
    ) -> bool:
        """Ask Redis for a sample at the level deciding *key*; the request becomes
        one if granted (rendered, keeping its static document); else the decision
        as Redis has it."""
        level = deciding_level(record, key.pattern)
        args = [level, self._config.sample_pages, f"{self._clock():.3f}"]
        args += [CLAIM_SECONDS, self._config.recheck_interval]
        reply = await self._state.claim(key.host, args)
        if reply is None:
            return False
        granted, hash_fields = reply
        record = self._store(key.host, hash_fields)
        if not granted:
            return self._answer(request, record, key, self._verdict(record, key))
        request.meta[meta.RENDER_SAMPLE] = True
        request.meta[meta.RENDER_KEEP_STATIC] = True
        request.meta.pop(UNDECIDED, None)
        if record.level(level).decision is None:  # a slot, not a re-check
            request.meta[SAMPLE_LEVEL] = [key.host, level]
        return True

    # --- reading -------------------------------------------------------------------

    async def _read(self, host: str) -> HostRecord | None:
        """The host's record from Redis (one read at a time per host), or None when
        Redis is away."""
        if (reading := self._reading.get(host)) is not None:
            return await asyncio.shield(reading)
        future = asyncio.get_running_loop().create_future()
        self._reading[host] = future
        try:
            hash_fields = await self._state.read(host)
            record = None if hash_fields is None else self._store(host, hash_fields)
            future.set_result(record)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: awaited by nobody else, maybe
            raise
        finally:
            del self._reading[host]
        return record

    def _store(self, host: str, hash_fields: dict[bytes, bytes]) -> HostRecord:
        record, bad = read_host(hash_fields)
        if bad:
            self._state.bad(bad, f"{bad} unreadable fields of host {host}")
        self._hosts[host] = (record, self._clock())
        self._hosts.move_to_end(host)
        while len(self._hosts) > CACHE_SIZE:
            self._hosts.popitem(last=False)
        return record

    def _forget(self, host: str) -> None:
        self._hosts.pop(host, None)

    # --- after a sample: outcomes and parked pages are the learner's -----------------

    async def record_sample(
        self, url: str, *, gained_links: int, gained_text: float
    ) -> list[Request]:
        """The learner's ``record_sample``: the parked pages its decision sends to be
        rendered."""
        return await self._learner.record_sample(
            url, gained_links=gained_links, gained_text=gained_text
        )

    async def park(self, again: Request) -> bool:
        """The learner's ``park``: True if *again* is the caller's to send."""
        return await self._learner.park(again)

    async def release(self, request: Request) -> None:
        """Give back the sample slot of *request*, a sample that cannot be compared
        (not an HTML page): another page of its host is sampled instead."""
        claimed = request.meta.get(SAMPLE_LEVEL)
        if not (isinstance(claimed, list) and len(claimed) == 2):
            return  # a re-check: nothing to give back
        host, level = (str(part) for part in claimed)
        if level not in (HOST, pattern_of(level)) or _host_of_key(host) is None:
            return  # not what this advisor wrote (a hostile queue entry)
        await self._state.release(host, level)
        self._hosts.pop(host, None)

    # --- bookkeeping ---------------------------------------------------------------

    def _in_background(self, call: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(call)
        self._tasks.add(task)  # kept until done: the loop holds tasks weakly
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop background reads; close the client."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
        await self._state.close()


def _host_of_key(host: str) -> str | None:
    """*host* if it is a decision key's host (``host:port``), else None."""
    try:
        return host if key_of(f"http://{host}/").host == host else None
    except BadURLError:
        return None
