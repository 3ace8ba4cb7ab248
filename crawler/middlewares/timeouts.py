"""TimeoutsMiddleware: each request's timeout comes from its tier; a timeout sends it
back to the frontier one tier down, and hosts are remembered as slow or dead.

The rules are in ``crawler.policy.tiers``; this module wires them to requests, to
the hosts' records in Redis (shared by every node) and to the frontier's per-host
delays (a dead host's pause, a ``Retry-After``). Other failures are left to
Scrapy's RetryMiddleware, whose retries go through the frontier like these.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import DownloadTimeoutError
from scrapy.utils.misc import load_object
from twisted.internet.error import TCPTimedOutError
from twisted.internet.error import TimeoutError as TxTimeoutError

from crawler.crawlstate.connection import sync_client
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.admission import tier_of
from crawler.frontier.damage import retyped
from crawler.frontier.hostdelays import HostDelays
from crawler.frontier.outage import (
    REDIS_ERRORS,
    RedisOutage,
    is_outage,
    use_reactor_retry,
)
from crawler.meta import ROBOTS_FETCH
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.suffixes import most_specific, normalized_table
from crawler.policy.tiers import (
    BadHealthRecordError,
    HealthEvent,
    HostHealth,
    TiersConfig,
    after_escalation,
    after_give_up,
    after_success,
)
from crawler.startup import StartupFailure

if TYPE_CHECKING:
    from collections.abc import Callable

    import redis
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

TIMEOUTS = (DownloadTimeoutError, TxTimeoutError, TCPTimedOutError)
# Host records kept in this process, and how long one is trusted before it is
# read again (other nodes mark hosts too).
HEALTH_CACHE_SIZE = 65536
HEALTH_CACHE_SECONDS = 60.0
# The longest Retry-After honoured; a longer one is taken as this.
MAX_RETRY_AFTER = 3600.0
RETRY_AFTER_STATUSES = frozenset({429, 503})


class TimeoutsMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        config: TiersConfig,
        far: Callable[[str], bool],
        delays: HostDelays,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._far = far
        self._delays = delays
        self._records = HostRecords(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad setting, a stand-in that logs one line and
        closes the spider as soon as it opens (``scrapy crawl`` exits with 1)."""
        try:
            config = TiersConfig.from_settings(crawler.settings)
            far = far_hosts(crawler.settings.get("TIMEOUTS_FAR_HOSTS"))
            delays = HostDelays.of(crawler)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, far, delays)

    def process_request(self, request: Request) -> None:
        if request.meta.get(ROBOTS_FETCH):
            return  # robots.txt has its own timeout, and its failures their own rules
        if "tier" not in request.meta:
            host = _host(request)
            far = host is not None and self._far(host)
            health = self._records.get(host) if host is not None else HostHealth()
            request.meta["tier"] = self._config.start_tier(health, far=far)
        else:
            request.meta["tier"] = tier_of(request)  # a queue entry's: maybe not an int
        request.meta["download_timeout"] = self._config.timeout_of(request.meta["tier"])

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(ROBOTS_FETCH) or (host := _host(request)) is None:
            return response
        health = self._records.get(host)
        tier = request.meta.get("tier", 0)
        self._update(host, health, *after_success(self._config, health, tier=tier))
        if response.status in RETRY_AFTER_STATUSES:
            self._hold_for_retry_after(host, response)
        return response

    def process_exception(
        self, request: Request, exception: Exception
    ) -> Request | None:
        if not isinstance(exception, TIMEOUTS) or request.meta.get(ROBOTS_FETCH):
            return None
        if (host := _host(request)) is None:
            return None
        tier = request.meta.get("tier", 0)
        self._stats.inc_value(f"timeouts/tier_{tier}")
        health, now = self._records.get(host), time.time()
        following = self._config.next_tier(tier)
        if following is None:
            self._stats.inc_value("timeouts/gave_up")
            self._update(host, health, *after_give_up(self._config, health, now=now))
            request.meta["dont_retry"] = True  # given up: no retry by Scrapy either
            return None
        self._stats.inc_value("timeouts/escalated")
        self._update(host, health, *after_escalation(self._config, health, now=now))
        return request.replace(
            dont_filter=True,
            priority=request.priority - 1,
            meta={**request.meta, "tier": following},
        )

    def _update(
        self, host: str, old: HostHealth, new: HostHealth, event: HealthEvent | None
    ) -> None:
        if new != old:
            self._records.put(host, new)
        if event is None:
            return
        if event == "paused":
            self._delays.hold(host, new.paused_until, "paused")
            self._stats.inc_value("timeouts/paused_hosts")
        elif event == "slow":
            self._stats.inc_value("timeouts/slow_hosts")
        else:
            self._stats.inc_value("timeouts/recovered")
        logger.info(
            "Host %(host)s: %(event)s",
            {"host": host, "event": _EVENT_TEXT[event]},
            extra={"spider": self._crawler.spider},
        )

    def _hold_for_retry_after(self, host: str, response: Response) -> None:
        """A 429 or 503 with Retry-After pushes the host's next fetch back."""
        seconds = retry_after_seconds(response.headers.get(b"Retry-After"))
        if seconds is not None:
            self._delays.hold(host, time.time() + seconds, "retry-after")
            self._stats.inc_value("timeouts/retry_after")


_EVENT_TEXT: dict[HealthEvent, str] = {
    "slow": "marked slow after repeated timeouts; its requests start on tier 1",
    "recovered": "answers quickly again; no longer slow",
    "paused": "timed out on every tier repeatedly; paused",
}


def _host(request: Request) -> str | None:
    try:
        return host_of(request.url)
    except BadURLError:
        return None


def retry_after_seconds(value: bytes | None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds, a fraction allowed; an
    HTTP date or anything else is ignored), capped at MAX_RETRY_AFTER."""
    try:
        text = (value or b"").decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if not text.replace(".", "", 1).isdigit():  # no sign, exponent, nan or inf
        return None
    return min(float(text), MAX_RETRY_AFTER)  # a huge number is inf: capped


def far_hosts(value: object) -> Callable[[str], bool]:
    """TIMEOUTS_FAR_HOSTS: domain suffixes (a list, or a comma-separated or JSON list
    from ``-s``), or the import path of host -> bool."""
    setting = value
    if isinstance(value, str) and "." in value and "," not in value:
        try:
            found = load_object(value)
        except (ImportError, NameError, ValueError, AttributeError):
            found = None
        if callable(found):
            return found  # type: ignore[no-any-return]
    if isinstance(value, str) and value.strip().startswith(("[", "{")):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            value = None
    elif isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple) or not all(
        isinstance(suffix, str) for suffix in value
    ):
        raise ValueError(
            "TIMEOUTS_FAR_HOSTS must be a list of domain suffixes or the import path "
            f"of a function host -> bool, got {setting!r}"
        )
    table = normalized_table(dict.fromkeys(value, True), "TIMEOUTS_FAR_HOSTS")
    return lambda host: most_specific(host, table) is not None


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
        self._gate = RedisOutage.of(crawler).gate("the timeouts middleware")
        self._bad_logged = False

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
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("timeouts/bad_records", count)
        if not self._bad_logged:
            self._bad_logged = True
            logger.warning(
                "Ignored host health state the crawler did not write (%(what)s); "
                "further ones are only counted in timeouts/bad_records",
                {"what": what},
                extra={"spider": self._crawler.spider},
            )

    def _remember(self, host: str, health: HostHealth, now: float) -> None:
        self._cache[host] = (health, now)
        self._cache.move_to_end(host)
        if len(self._cache) > HEALTH_CACHE_SIZE:
            self._cache.popitem(last=False)

    def _redis(self) -> redis.Redis:
        if self._client is None:
            self._client = sync_client(self._crawler)
            use_reactor_retry(self._client)  # a longer wait is self._gate's
        return self._client
