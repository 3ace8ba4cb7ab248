"""RetryLaterMiddleware: a leased request whose failure may pass is held and tried
again later; one that failed for good is marked with its fate.

Placed next to the engine (after Scrapy's RetryMiddleware and our timeout tiers have
had their immediate tries), it sees every final answer and failure of a request the
frontier handed out. A failure that may pass (crawler.policy.fates: robots.txt
unreachable, network errors, timeouts on every tier, 429 and 5xx answers) is sent
back to the frontier as a copy that the frontier holds until its time
(crawler.policy.holdtimes); the lease of the original is released with it. After
the last delay of ``RETRY_LATER_DELAYS`` the fate is final, and it is recorded in the
request's meta (``crawler.meta.FATE``) for the spider's record and the frontier's
fate counters.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from crawler import meta
from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.frontier.holds import HoldRequest
from crawler.middlewares.timeouts import retry_after_seconds
from crawler.policy.fates import fate_of_exception, fate_of_status, may_pass
from crawler.policy.holdtimes import RetryLaterConfig, hold_until

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from crawler.policy.fates import Fate

logger = logging.getLogger(__name__)


class RetryLaterMiddleware:
    def __init__(self, crawler: Crawler, config: RetryLaterConfig) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._allowed = {
            int(code) for code in crawler.settings.getlist("HTTPERROR_ALLOWED_CODES")
        }
        self._allow_all = crawler.settings.getbool("HTTPERROR_ALLOW_ALL")
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = RetryLaterConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config)

    def process_exception(
        self, request: Request, exception: Exception
    ) -> Request | None:
        if meta.LEASE not in request.meta:
            return None  # not the frontier's (robots.txt fetches, engine.download)
        names = [f"{c.__module__}.{c.__qualname__}" for c in type(exception).__mro__]
        fate = fate_of_exception(names)
        not_before = exception.until if isinstance(exception, HoldRequest) else None
        return self._decide(request, fate, not_before=not_before)

    def process_response(
        self, request: Request, response: Response
    ) -> Request | Response:
        if meta.LEASE not in request.meta or response.status < 400:
            return response
        if self._spider_handles(request, response.status):
            return response
        retry_after = retry_after_seconds(response.headers.get(b"Retry-After"))
        not_before = None if retry_after is None else time.time() + retry_after
        held = self._decide(
            request, fate_of_status(response.status), response.status, not_before
        )
        return response if held is None else held

    def _decide(
        self,
        request: Request,
        fate: Fate,
        status: int | None = None,
        not_before: float | None = None,
    ) -> Request | None:
        """The held copy of *request*, or None when its fate is final (then marked)."""
        request.meta[meta.FATE] = fate
        if not may_pass(fate, status) or request.meta.get(meta.DONT_RETRY_LATER):
            return None
        held_times = request.meta.get(meta.HELD_TIMES, 0)
        if not isinstance(held_times, int):
            held_times = 0
        now = time.time()
        until = hold_until(
            self._config, held_times=held_times, now=now, not_before=not_before
        )
        if until is None:
            self._stats.inc_value(f"retry_later/gave_up_count/{fate}")
            return None
        self._stats.inc_value(f"retry_later/held_count/{fate}")
        self._held(request, fate, until - now)
        return request.replace(
            dont_filter=True,
            meta={
                **{k: v for k, v in request.meta.items() if k != meta.FATE},
                meta.HELD_TIMES: held_times + 1,
                meta.HOLD_UNTIL: until,
            },
        )

    def _spider_handles(self, request: Request, status: int) -> bool:
        """Whether the spider asked to see this status (Scrapy's HttpError rules)."""
        if self._allow_all or request.meta.get("handle_httpstatus_all"):
            return True
        if "handle_httpstatus_list" in request.meta:
            return status in request.meta["handle_httpstatus_list"]
        spider_list = getattr(self._crawler.spider, "handle_httpstatus_list", ())
        return status in spider_list or status in self._allowed

    def _held(self, request: Request, fate: Fate, seconds: float) -> None:
        """Count a hold; log the first (holds are routine: INFO, not WARNING)."""
        self._once.event(
            "retry_later/held",
            "Holding %(url)s (%(fate)s) for %(seconds).0fs before trying it again; "
            "further holds are counted in retry_later/held",
            {"url": request.url, "fate": fate, "seconds": seconds},
            level=logging.INFO,
        )
