"""Downloading one origin's robots.txt through the engine, as the bot, redirects and all.

What the answer means (parse, unavailable, unreachable) is decided in
``crawler.policy.robotsfetch``; this module only makes the request and reads the
response. The request goes through the downloader like any other (so its host's
traffic and WARC records include it) but is marked ``crawler.meta.ROBOTS_FETCH``:
the robots middleware lets it pass, the timeout tiers leave it alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http.request import NO_CALLBACK

from crawler import __version__
from crawler.meta import ROBOTS_FETCH
from crawler.policy.botname import bot_user_agent
from crawler.policy.robotsfetch import (
    MAX_REDIRECTS,
    Fetch,
    RobotsConfig,
    outcome_of_status,
    redirect_target,
    robots_url,
)
from crawler.policy.robotsrules import robots_text

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


def stats_value(exception: BaseException) -> str:
    """An exception as a stats family value: its dotted import path."""
    kind = type(exception)
    return f"{kind.__module__}.{kind.__qualname__}"


class RobotsDownloader:
    """Fetches robots.txt files with the bot's own User-Agent (counted in stats)."""

    def __init__(self, crawler: Crawler, config: RobotsConfig) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config

    async def fetch(self, origin: str) -> Fetch:
        """Download *origin*'s robots.txt, following up to ``MAX_REDIRECTS``; any
        failure to get an answer is an ``unreachable`` fetch, never raised."""
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
        return Fetch("parse", response.status, self._text(origin, response))

    def _text(self, origin: str, response: Response) -> str:
        """The part of the body that is obeyed; a truncation is counted and logged."""
        text, truncated = robots_text(response.body)
        if truncated:
            self._stats.inc_value("robots/truncated")
            logger.warning(
                "robots.txt of %(origin)s is %(size)d bytes: only its first 500 KiB "
                "are obeyed",
                {"origin": origin, "size": len(response.body)},
                extra={"spider": self._crawler.spider},
            )
        return text

    def _request(self, url: str) -> Request:
        meta = {
            ROBOTS_FETCH: True,
            "dont_retry": True,  # a failure is retried after ROBOTS_ERROR_RETRY_DELAY
            "dont_redirect": True,  # followed in fetch, whatever REDIRECT_ENABLED says
            "handle_httpstatus_all": True,
            "download_timeout": self._config.fetch_timeout,
        }
        config = self._config
        user_agent = bot_user_agent(config.user_agent, __version__, config.contact)
        headers = {"User-Agent": user_agent}  # the bot's own, never a browser's
        return Request(
            url, callback=NO_CALLBACK, meta=meta, headers=headers, dont_filter=True
        )


def _location(response: Response) -> str | None:
    location = response.headers.get(b"Location")
    return location.decode("utf-8", errors="replace") if location else None
