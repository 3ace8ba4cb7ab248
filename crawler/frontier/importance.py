"""Importance order's bookkeeping on this node (``FRONTIER_ORDER = importance``).

The formula and the credit rules are pure policy (``crawler.policy.importance``,
``crawler.policy.urlimportance``); Redis keeps each queued URL's importance and
moves it as in-links arrive (the push script). Here: what a request is pushed with
(``Importance.pending_fields``), the key Redis and this node both name a URL by
(``url_key``), and the credit each link of a page passes on
(``LinkCreditMiddleware``, for any spider; the ``bfs`` spider gives its own).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from crawler.meta import IMPORTANCE, LINK_CREDIT
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.importance import (
    SEED_CREDIT,
    ImportanceConfig,
    check_config,
    link_credits,
)
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

# Hex digits of the SHA-1 of a URL that name it in a host's importance index: 64
# bits, so two queued URLs of one host share a key with odds of about n / 2**64.
URL_KEY_DIGITS = 16


def url_key(url: str) -> str:
    """The key a URL's importance is kept under in Redis (the push and pop scripts
    compute it the same way from the entry's URL)."""
    return hashlib.sha1(url.encode()).hexdigest()[:URL_KEY_DIGITS]  # noqa: S324


@dataclass(frozen=True, slots=True)
class Importance:
    """The formula's config and the URL scorer of one crawl."""

    config: ImportanceConfig
    url_scorer: Callable[[str], float]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Importance:
        """Read the IMPORTANCE_* settings; ``ValueError`` names a bad one."""
        config = check_config(
            get_float(settings, "IMPORTANCE_ALPHA"),
            get_float(settings, "IMPORTANCE_BETA"),
            settings.get("IMPORTANCE_BACKLINKS"),
        )
        path = settings.get("IMPORTANCE_URL_SCORER")
        try:
            scorer = load_object(path)
        except (ImportError, NameError, ValueError, AttributeError, TypeError) as exc:
            raise ValueError(
                f"IMPORTANCE_URL_SCORER must name a callable (module.name), got "
                f"{path!r}: {exc}"
            ) from None
        if not callable(scorer):
            raise ValueError(f"IMPORTANCE_URL_SCORER {path!r} is not callable")  # noqa: TRY004 (a setting: one line, exit 1)
        return cls(config, scorer)

    def location(self, url: str) -> float:
        """IL(url) by the crawl's scorer; 0 for a score it cannot give (counted by
        no one: a scorer is the user's code, and a URL scored 0 still goes)."""
        try:
            score = float(self.url_scorer(url))
        except Exception:  # noqa: BLE001 (the user's scorer must not stop a crawl)
            return 0.0
        return score if 0 <= score < math.inf else 0.0

    def pending_fields(
        self, request: Request, credit: float | None, seed: bool
    ) -> dict[str, Any]:
        """What a request is pushed with: its URL key, its importance if it is new
        (a retry or redirect keeps the importance it was popped with; a seed starts
        with SEED_CREDIT) and what one more in-link adds."""
        if seed:
            credit = SEED_CREDIT
        popped = request.meta.get(IMPORTANCE)
        if credit is None and isinstance(popped, int | float):
            first = float(popped)
        else:
            credit = credit or 0.0
            first = self.config.first(credit, self.location(request.url))
        return {
            "url_key": url_key(request.url),
            "importance": first,
            "credit": self.config.more(credit or 0.0),
        }


class LinkCreditMiddleware:
    """Gives each request a page yields its credit (``meta[LINK_CREDIT]``): its share
    of the page's importance, by ``IMPORTANCE_BACKLINKS``. A page's requests are
    counted before any is passed on (its out-degree divides its importance), so a
    callback's requests go on when the callback is through. A request that has a
    credit already (the ``bfs`` spider gives its own) keeps it."""

    def __init__(self, config: ImportanceConfig) -> None:
        self._mode = config.backlinks

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if crawler.settings.get("FRONTIER_ORDER") != "importance":
            raise NotConfigured
        return cls(Importance.from_settings(crawler.settings).config)

    def process_spider_output(
        self, response: Response, result: Iterable[Any]
    ) -> Iterator[Any]:
        outputs = list(result)
        self._give_credits(response, outputs)
        yield from outputs

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        outputs = [output async for output in result]
        self._give_credits(response, outputs)
        for output in outputs:
            yield output

    def _give_credits(self, response: Response, outputs: list[Any]) -> None:
        requests = [o for o in outputs if isinstance(o, Request)]
        if all(LINK_CREDIT in request.meta for request in requests):
            return  # none, or the spider gave each its credit
        try:
            host = host_of(response.url)
        except BadURLError:
            host = ""
        external = [_host_or_none(r.url) != host for r in requests]
        importance = response.meta.get(IMPORTANCE)
        if not isinstance(importance, int | float):
            importance = 0.0
        internal_credit, external_credit = link_credits(
            self._mode, float(importance), len(requests), sum(external)
        )
        for request, outside in zip(requests, external, strict=True):
            if LINK_CREDIT not in request.meta:
                credit = external_credit if outside else internal_credit
                request.meta[LINK_CREDIT] = credit


def _host_or_none(url: str) -> str | None:
    try:
        return host_of(url)
    except BadURLError:
        return None
