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

from crawler.meta import BACKLINKS, IMPORTANCE, LINK_CREDIT
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.importance import (
    SEED_CREDIT,
    ImportanceConfig,
    LinkCredit,
    check_config,
    link_credit,
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
        self, request: Request, credit: LinkCredit | None, seed: bool
    ) -> dict[str, Any]:
        """What a request is pushed with: its URL key; if it is new, its importance
        and backlink importance (a seed's start at SEED_CREDIT; a retry or redirect
        keeps what its request was popped with); what one more in-link adds to both
        if it is queued already; what it adds to its host's term."""
        if seed:
            credit = LinkCredit(SEED_CREDIT)
        popped, backlinks = request.meta.get(IMPORTANCE), request.meta.get(BACKLINKS)
        fields = _credit_fields(self.config, credit, url_key(request.url))
        if credit is None and isinstance(popped, int | float):
            fields["importance"] = float(popped)
            if isinstance(backlinks, int | float):
                fields["backlinks"] = float(backlinks)
        else:
            location = self.location(request.url)
            fields["importance"] = self.config.first(fields["backlinks"], location)
        return fields


def _credit_fields(
    config: ImportanceConfig, credit: LinkCredit | None, key: str
) -> dict[str, Any]:
    url = 0.0 if credit is None else credit.url
    return {
        "url_key": key,
        "backlinks": url,
        "credit": url,
        "gain": config.more(url),
        "host_credit": 0.0 if credit is None else config.more(credit.host),
    }


def credit_of(value: object) -> LinkCredit | None:
    """A request's ``meta[LINK_CREDIT]`` as a LinkCredit (a number is a credit to
    the URL alone); None if it has none, or not a number."""
    if isinstance(value, LinkCredit):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return LinkCredit(float(value))
    return None


class LinkCreditMiddleware:
    """Gives each request a page yields its credit (``meta[LINK_CREDIT]``, by
    ``IMPORTANCE_BACKLINKS``). A page's requests are counted before any is passed
    on (its out-degree divides its backlink importance), so a callback's requests
    go on when the callback is through. A request that has a credit already (the
    ``bfs`` spider gives its own) keeps it."""

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
        backlinks = response.meta.get(BACKLINKS)
        if not isinstance(backlinks, int | float):
            backlinks = 0.0
        depth = response.meta.get("depth", 0)
        for request in requests:
            if LINK_CREDIT not in request.meta:
                request.meta[LINK_CREDIT] = link_credit(
                    self._mode,
                    float(backlinks),
                    depth if isinstance(depth, int) else 0,
                    len(requests),
                    _host_or_none(request.url) != host,
                )


def _host_or_none(url: str) -> str | None:
    try:
        return host_of(url)
    except BadURLError:
        return None


# In-links are sent to Redis once this many URLs have some, or this long (seconds)
# after the last were sent: a URL found linked by several pages meanwhile costs one
# record, and the frontier's order is that much behind its in-links at most.
IN_LINKS_BATCH = 500
IN_LINKS_DELAY = 0.5


class InLinks:
    """In-links of URLs this node pushed before (importance order), summed by URL
    until they are sent: what each adds to its URL's backlink importance, to its
    importance and to its host's term, and how many in-links that is."""

    def __init__(self, config: ImportanceConfig) -> None:
        self._config = config
        self._links: dict[tuple[int, str, str], list[float]] = {}
        self._count = 0
        self._sent_at = 0.0

    def __len__(self) -> int:
        return self._count  # in-links held, not URLs

    def add(self, shard: int, host: str, url: str, credit: LinkCredit) -> None:
        sums = self._links.setdefault((shard, host, url_key(url)), [0.0, 0.0, 0.0, 0])
        sums[0] += credit.url
        sums[1] += self._config.more(credit.url)
        sums[2] += self._config.more(credit.host)
        sums[3] += 1
        self._count += 1

    def due(self, now: float) -> bool:
        """Whether they are to go with this round trip."""
        if not self._links:
            return False
        return (
            len(self._links) >= IN_LINKS_BATCH or now - self._sent_at >= IN_LINKS_DELAY
        )

    def take(self, now: float) -> dict[int, list[dict[str, str]]]:
        """The credit script's records, by shard; forgotten here (``put_back``)."""
        records: dict[int, list[dict[str, str]]] = {}
        for (shard, host, key), (
            credit,
            gain,
            host_credit,
            links,
        ) in self._links.items():
            records.setdefault(shard, []).append(
                {
                    "host": host,
                    "url_key": key,
                    "credit": repr(credit),
                    "gain": repr(gain),
                    "host_credit": repr(host_credit),
                    "links": str(int(links)),
                }
            )
        self._links, self._count, self._sent_at = {}, 0, now
        return records

    def put_back(self, records: dict[int, list[dict[str, str]]]) -> None:
        """Records a failed round trip took: kept for the next one."""
        for shard, items in records.items():
            for item in items:
                key = (shard, item["host"], item["url_key"])
                sums = self._links.setdefault(key, [0.0, 0.0, 0.0, 0])
                for i, name in enumerate(("credit", "gain", "host_credit", "links")):
                    sums[i] += float(item[name])
                self._count += int(item["links"])
