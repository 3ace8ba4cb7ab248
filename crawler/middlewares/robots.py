"""RobotsMiddleware: RFC 9309 robots.txt, fetched once per origin for the whole cluster.

Wiring only: what a fetch means and how long it holds is ``crawler.policy.robotsfetch``.
An origin's rules come from this process's LRU, else from its record in Redis
(``CrawlKeys.robots``), else from a fetch made under a Redis lock
(``CrawlKeys.robots_lock``): one node fetches while the others wait for the record it
writes. Rules are matched for ``ROBOTSTXT_USER_AGENT``, never the User-Agent header.
The robots.txt fetch counts as a fetch of its host: the request that waited for it
goes out only after the host's delay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, NoReturn
from weakref import WeakKeyDictionary

from redis.exceptions import LockError, ResponseError
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http.request import NO_CALLBACK

from crawler import __version__
from crawler.crawlstate.connection import async_client
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.holds import ForbiddenByRobots, HoldRequest
from crawler.frontier.hostdelays import HostDelays
from crawler.frontier.outage import REDIS_ERRORS, RedisOutage, is_outage, patiently
from crawler.meta import ROBOTS_FETCH
from crawler.policy.botname import bot_user_agent
from crawler.policy.hosts import host_of
from crawler.policy.robotsfetch import (
    MAX_REDIRECTS,
    BadRecordError,
    Fetch,
    RobotsConfig,
    RobotsRecord,
    origin_of,
    outcome_of_status,
    record_after,
    redirect_target,
    retention,
    robots_url,
)
from crawler.policy.robotsrules import RobotsRules, parse_rules, robots_text
from crawler.startup import StartupFailure

if TYPE_CHECKING:
    from typing import Self

    import redis.asyncio
    from redis.asyncio.lock import Lock
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Signal sent with host=, origin=, sitemaps= (URLs) and request= (the request that
# led to the fetch) when this node has fetched a robots.txt that lists sitemaps.
robots_sitemaps = object()

# Origins whose parsed rules this process keeps (the least recently used go first).
CACHE_SIZE = 4096
# Seconds between two looks at a robots.txt that another node is fetching.
POLL_INTERVAL = 0.1
# Seconds the fetch lock outlives the longest fetch it guards.
LOCK_MARGIN = 5.0
# Scrapy's meta key for a user's requests robots.txt does not apply to (our own
# fetches carry crawler.meta.ROBOTS_FETCH instead).
SKIP_META_KEY = "dont_obey_robotstxt"


def stats_value(exception: BaseException) -> str:
    """An exception as a stats family value: its dotted import path."""
    kind = type(exception)
    return f"{kind.__module__}.{kind.__qualname__}"


@dataclass(slots=True)
class _Entry:
    record: RobotsRecord
    rules: RobotsRules | None
    warned: bool = False


class _RulesCache:
    """The parsed rules of the origins used last, each until its record expires."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def get(self, origin: str, now: float) -> _Entry | None:
        entry = self._entries.get(origin)
        if entry is None or not entry.record.fresh(now):
            self._entries.pop(origin, None)
            return None
        self._entries.move_to_end(origin)
        return entry

    def put(self, origin: str, entry: _Entry) -> None:
        self._entries[origin] = entry
        self._entries.move_to_end(origin)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


_BY_CRAWLER: WeakKeyDictionary[Crawler, RobotsMiddleware] = WeakKeyDictionary()


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, config: RobotsConfig, keys: CrawlKeys) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._keys = keys
        self._lock_timeout = config.fetch_budget + LOCK_MARGIN
        self._cache = _RulesCache(CACHE_SIZE)
        self._loading: dict[str, asyncio.Event] = {}
        self._redis: redis.asyncio.Redis | None = None
        self._gate = RedisOutage.of(crawler).gate("the robots middleware")
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        _BY_CRAWLER[crawler] = self

    @classmethod
    def of(cls, crawler: Crawler) -> RobotsMiddleware | None:
        """The crawler's robots middleware, if robots.txt is obeyed."""
        return _BY_CRAWLER.get(crawler)

    def known_verdict(self, url: str) -> bool | None:
        """Whether robots.txt allows *url*, if this node holds its origin's rules
        now; None when it does not know (the download path decides then)."""
        try:
            origin = origin_of(url)
        except ValueError:
            return None
        entry = self._cache.get(origin, time.time())
        if entry is None or entry.record.state == "deny":
            return None  # unknown, or unreachable: may be retried before it is due
        return entry.rules is None or entry.rules.allows(url)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad setting, a stand-in that logs one line and
        closes the spider as soon as it opens (``scrapy crawl`` exits with 1)."""
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        assert crawler.spider is not None
        try:
            config = RobotsConfig.from_settings(crawler.settings)
            HostDelays.of(crawler)  # Crawl-delays go there: its settings must be good
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, CrawlKeys.of(crawler.settings, crawler.spider.name))

    async def process_request(self, request: Request) -> None:
        """Let *request* go, raise ``ForbiddenByRobots`` (counted) if robots.txt forbids
        it, or ``HoldRequest`` until the next attempt if robots.txt is unreachable."""
        if request.meta.get(ROBOTS_FETCH) or request.meta.get(SKIP_META_KEY):
            return
        try:
            origin = origin_of(request.url)
        except ValueError:
            return  # not http(s): robots.txt does not apply
        entry, fetched = await self._entry(origin, request)
        if entry.record.state == "deny":
            self._hold_unreachable(entry, origin, request)
        if entry.rules is not None and not entry.rules.allows(request.url):
            self._stats.inc_value("robots/disallowed")
            logger.debug(
                "Forbidden by robots.txt: %(request)s",
                {"request": request},
                extra={"spider": self._crawler.spider},
            )
            raise ForbiddenByRobots("Forbidden by robots.txt")
        if fetched:  # the site has just seen a request of this host: keep its delay
            delays = HostDelays.of(self._crawler)
            await asyncio.sleep(delays.delay_for(host_of(origin), now=time.time()))

    # --- where an origin's rules come from --------------------------------------------

    async def _entry(self, origin: str, request: Request) -> tuple[_Entry, bool]:
        """*origin*'s rules, and whether this call fetched them from the site."""
        if (entry := self._cache.get(origin, time.time())) is not None:
            return entry, False
        if (loading := self._loading.get(origin)) is not None:
            await loading.wait()  # another request of this node is loading them
            if (entry := self._cache.get(origin, time.time())) is not None:
                return entry, False
        done = self._loading[origin] = asyncio.Event()
        try:
            record, fetched = await self._load(origin)
            entry = self._install(origin, record, fetched=fetched, request=request)
        finally:
            if self._loading.get(origin) is done:
                del self._loading[origin]
            done.set()
        return entry, fetched

    async def _load(self, origin: str) -> tuple[RobotsRecord, bool]:
        """The fresh record in Redis, else one this node fetches under the lock; and
        whether it fetched. A node that finds the lock taken waits for the record, at
        most as long as the lock can live. While Redis is away, the request waits
        for it (``patiently``) instead of failing."""
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

    async def _stale_lock(self, origin: str) -> bool:
        """Delete *origin*'s fetch lock if no node wrote it (it has no expiry); whether
        it did. Counted in robots/bad_records."""
        key = self._keys.robots_lock(origin)
        if await self._client().pttl(key) != -1:
            return False
        await self._client().delete(key)
        self._stats.inc_value("robots/bad_records")
        logger.warning(
            "Deleted the robots.txt fetch lock of %(origin)s: it had no expiry, so no "
            "node wrote it",
            {"origin": origin},
            extra={"spider": self._crawler.spider},
        )
        return True

    async def _load_locked(self, origin: str) -> tuple[RobotsRecord, bool]:
        record, error = await self._read(origin)
        if record is not None and record.fresh(time.time()):
            self._stats.inc_value("robots/cache_hits")  # written while we waited
            return record, False
        if error is not None:
            self._stats.inc_value("robots/bad_records")
            logger.warning(
                "Ignored the cached robots.txt record of %(origin)s (%(error)s); "
                "fetching it again",
                {"origin": origin, "error": error},
                extra={"spider": self._crawler.spider},
            )
        return await self._fetch_and_store(origin, record), True

    async def _read(
        self, origin: str
    ) -> tuple[RobotsRecord | None, BadRecordError | None]:
        key = self._keys.robots(origin)
        try:
            data = await patiently(self._gate, lambda: self._client().get(key))
        except ResponseError:  # a key of the wrong type where the record belongs
            kind = await self._client().type(key)
            if kind in (b"string", b"none"):
                raise
            await self._client().delete(key)
            self._stats.inc_value("robots/bad_records")
            logger.warning(
                "Deleted the robots.txt record of %(origin)s: a %(kind)r the crawler "
                "did not write; fetching it again",
                {"origin": origin, "kind": kind},
                extra={"spider": self._crawler.spider},
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
        fetch = await self._fetch(origin)
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

    # --- fetching ---------------------------------------------------------------------

    async def _fetch(self, origin: str) -> Fetch:
        """Download *origin*'s robots.txt, following up to ``MAX_REDIRECTS``."""
        self._stats.inc_value("robots/fetched")
        url = robots_url(origin)
        assert self._crawler.engine is not None
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = await self._crawler.engine.download_async(self._request(url))
            except Exception as exc:  # noqa: BLE001 (timeouts, refusals: unreachable)
                self._stats.inc_value(f"robots/exception_count/{stats_value(exc)}")
                return Fetch("unreachable")
            outcome = outcome_of_status(response.status)
            target = redirect_target(url, _location(response))
            if outcome != "redirect" or target is None:
                break
            url = target
        self._stats.inc_value(f"robots/status_count/{response.status}")
        if outcome == "redirect":  # more than MAX_REDIRECTS, or nowhere to go
            return Fetch("unavailable", response.status)
        if outcome != "parse":
            return Fetch(outcome, response.status)
        text, truncated = robots_text(response.body)
        if truncated:
            self._stats.inc_value("robots/truncated")
            logger.warning(
                "robots.txt of %(origin)s is %(size)d bytes: only its first 500 KiB "
                "are obeyed",
                {"origin": origin, "size": len(response.body)},
                extra={"spider": self._crawler.spider},
            )
        return Fetch("parse", response.status, text)

    def _request(self, url: str) -> Request:
        meta = {
            ROBOTS_FETCH: True,
            "dont_retry": True,  # a failure is retried after ROBOTS_ERROR_RETRY_DELAY
            "dont_redirect": True,  # followed in _fetch, whatever REDIRECT_ENABLED says
            "handle_httpstatus_all": True,
            "download_timeout": self._config.fetch_timeout,
        }
        config = self._config
        user_agent = bot_user_agent(config.user_agent, __version__, config.contact)
        headers = {"User-Agent": user_agent}  # the bot's own, never a browser's
        return Request(
            url, callback=NO_CALLBACK, meta=meta, headers=headers, dont_filter=True
        )

    # --- using a record ---------------------------------------------------------------

    def _install(
        self, origin: str, record: RobotsRecord, *, fetched: bool, request: Request
    ) -> _Entry:
        """Parse *record*, tell the frontier its Crawl-delay, and cache it."""
        rules = None
        if record.state == "rules":
            rules = self._parse(origin, record.body or "")
        if record.gave_up:
            self._stats.inc_value("robots/gave_up")
        delay = rules.crawl_delay if rules is not None else None
        host = host_of(origin)
        HostDelays.of(self._crawler).set_crawl_delay(host, delay)
        if delay:
            self._stats.inc_value("robots/crawl_delay_hosts")
        if fetched and rules is not None and rules.sitemaps:
            self._crawler.signals.send_catch_log(
                robots_sitemaps,
                host=host,
                origin=origin,
                sitemaps=list(rules.sitemaps),
                request=request,
            )
        entry = _Entry(record, rules)
        self._cache.put(origin, entry)
        return entry

    def _parse(self, origin: str, text: str) -> RobotsRules | None:
        rules = parse_rules(
            text, user_agent=self._config.user_agent, base_url=robots_url(origin)
        )
        if rules is None:
            self._stats.inc_value("robots/parse_errors")
            logger.warning(
                "robots.txt of %(origin)s cannot be parsed: no restrictions apply",
                {"origin": origin},
                extra={"spider": self._crawler.spider},
            )
        return rules

    def _hold_unreachable(
        self, entry: _Entry, origin: str, request: Request
    ) -> NoReturn:
        """Hold *request* until the next robots.txt attempt: it is not lost, the
        frontier tries it again then (RFC 9309 2.3.1.4: meanwhile, nothing goes)."""
        self._stats.inc_value("robots/unreachable")
        if not entry.warned:
            entry.warned = True
            status = entry.record.status
            reason = f"HTTP {status}" if status else "no answer"
            retry = datetime.fromtimestamp(entry.record.expires_at, UTC)
            logger.warning(
                "robots.txt of %(origin)s is unreachable (%(reason)s): its URLs are "
                "held until the next attempt at %(retry)s",
                {
                    "origin": origin,
                    "reason": reason,
                    "retry": retry.isoformat(timespec="seconds"),
                },
                extra={"spider": self._crawler.spider},
            )
        raise HoldRequest(
            f"robots.txt of {origin} is unreachable: {request.url}",
            until=entry.record.expires_at,
            fate="robots_unreachable",
        )

    def _client(self) -> redis.asyncio.Redis:
        if self._redis is None:  # made on first use: no I/O at start-up
            self._redis = async_client(self._crawler)
        return self._redis

    async def _spider_closed(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None


def _location(response: Response) -> str | None:
    location = response.headers.get(b"Location")
    return location.decode("utf-8", errors="replace") if location else None
