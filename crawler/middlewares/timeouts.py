"""TimeoutsMiddleware: each request's timeout comes from its tier; a timeout sends it
back to the frontier one tier down, and hosts are remembered as slow or dead.

The rules are in ``crawler.policy.tiers``; this module wires them to requests, to
the hosts' records in Redis (shared by every node: ``crawler.middlewares.hosthealth``)
and to the frontier's per-host delays (a dead host's pause, a ``Retry-After``). Other failures are left to
Scrapy's RetryMiddleware, whose retries go through the frontier like these.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import DownloadTimeoutError
from scrapy.utils.misc import load_object
from twisted.internet.error import TCPTimedOutError
from twisted.internet.error import TimeoutError as TxTimeoutError

from crawler.context.crawl import CrawlContext
from crawler.context.startup import StartupFailure
from crawler.frontier.admission import tier_of
from crawler.meta import ROBOTS_FETCH, TIER
from crawler.middlewares.hosthealth import HostRecords
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.suffixes import most_specific, normalized_table
from crawler.policy.tiers import (
    HealthEvent,
    HostHealth,
    TiersConfig,
    after_escalation,
    after_give_up,
    after_success,
)
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

    from crawler.context.hostdelays import HostDelays
    from crawler.policy.backoff import Throttle

logger = logging.getLogger(__name__)

TIMEOUTS = (DownloadTimeoutError, TxTimeoutError, TCPTimedOutError)
# The longest Retry-After honoured; a longer one is taken as this.
MAX_RETRY_AFTER = 3600.0
RETRY_AFTER_STATUSES = frozenset({429, 503})
# A 429 or 503 is a throttle: the host's learnt delay rises (crawler.policy.backoff).
THROTTLE_OF: dict[int, Throttle] = {429: "429", 503: "503"}


class TimeoutsMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        config: TiersConfig,
        far: Callable[[str], bool],
        delays: HostDelays,
        render_timeout: float,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._far = far
        self._delays = delays
        # RENDER_TIMEOUT: a rendered page's timeout on tier 0; later tiers scale it
        # as they scale DOWNLOAD_TIMEOUT.
        self._render_timeout = render_timeout
        self._records = HostRecords(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad setting, a stand-in that logs one line and
        closes the spider as soon as it opens (``scrapy crawl`` exits with 1)."""
        try:
            config = TiersConfig.from_settings(crawler.settings)
            far = far_hosts(crawler.settings.get("TIMEOUTS_FAR_HOSTS"))
            delays = CrawlContext.of(crawler).delays
            render_timeout = _render_timeout(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, far, delays, render_timeout)

    def process_request(self, request: Request) -> None:
        if request.meta.get(ROBOTS_FETCH):
            return  # robots.txt has its own timeout, and its failures their own rules
        if TIER not in request.meta:
            host = _host(request)
            far = host is not None and self._far(host)
            health = self._records.get(host) if host is not None else HostHealth()
            request.meta[TIER] = self._config.start_tier(health, far=far)
        else:
            request.meta[TIER] = tier_of(request)  # a queue entry's: maybe not an int
        timeout = self._config.timeout_of(request.meta[TIER])
        if request.meta.get("playwright"):  # rendered (crawler.render.middleware)
            timeout *= self._render_timeout / self._config.tiers[0]
        request.meta["download_timeout"] = timeout

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(ROBOTS_FETCH) or (host := _host(request)) is None:
            return response
        health = self._records.get(host)
        tier = request.meta.get(TIER, 0)
        self._update(host, health, *after_success(self._config, health, tier=tier))
        now = time.time()
        if response.status in RETRY_AFTER_STATUSES:
            self._back_off_for_retry_after(host, response)
            self._delays.throttled(host, THROTTLE_OF[response.status], now=now)
        else:
            self._delays.answered(host, now=now)
        return response

    def process_exception(
        self, request: Request, exception: Exception
    ) -> Request | None:
        if not is_timeout(exception) or request.meta.get(ROBOTS_FETCH):
            return None
        if (host := _host(request)) is None:
            return None
        tier = request.meta.get(TIER, 0)
        self._stats.inc_value(f"timeouts/tier_{tier}")
        health, now = self._records.get(host), time.time()
        self._delays.throttled(host, "timeout", now=now)
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
            meta={**request.meta, TIER: following},
        )

    def _update(
        self, host: str, old: HostHealth, new: HostHealth, event: HealthEvent | None
    ) -> None:
        if new != old:
            self._records.put(host, new)
        if event is None:
            return
        if event == "paused":
            self._delays.back_off(host, new.paused_until, "paused")
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

    def _back_off_for_retry_after(self, host: str, response: Response) -> None:
        """A 429 or 503 with Retry-After pushes the host's next fetch back."""
        seconds = retry_after_seconds(response.headers.get(b"Retry-After"))
        if seconds is not None:
            self._delays.back_off(host, time.time() + seconds, "retry-after")
            self._stats.inc_value("timeouts/retry_after")


_EVENT_TEXT: dict[HealthEvent, str] = {
    "slow": "marked slow after repeated timeouts; its requests start on tier 1",
    "recovered": "answers quickly again; no longer slow",
    "paused": "timed out on every tier repeatedly; paused",
}


def is_timeout(exception: Exception) -> bool:
    """A download timeout: Scrapy's and Twisted's, or Playwright's (a rendered page
    over its time), recognised without importing Playwright."""
    if isinstance(exception, TIMEOUTS):
        return True
    errors = sys.modules.get("playwright._impl._errors")
    timeout = getattr(errors, "TimeoutError", None)
    return isinstance(timeout, type) and isinstance(exception, timeout)


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


def _render_timeout(settings: BaseSettings) -> float:
    """RENDER_TIMEOUT, checked as the render middleware checks it (a rendered
    request's tier 0 timeout; later tiers scale it)."""
    return get_float(settings, "RENDER_TIMEOUT", above=0, note="seconds")
