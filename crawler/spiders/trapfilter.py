"""TrapFilterMiddleware: the links a page yields, canonical, and spider traps cut.

Every request a callback yields (a link: seeds and retries never pass here) is
first written canonically (``crawler.policy.traps.canonical_url``: session
parameters dropped, query parameters sorted), so one page reached through many
spellings is queued once. Session keys no name gives are told from the page's links
as a whole (``crawler.policy.sessionids``), so a page's output is gathered before
any of it goes on. Then the rules a URL alone decides cut it before it is queued
(``repeated_path``, ``calendar``), as does a dated page's link to a date farther
from today (``calendar``: a "previous month" or "next day" chain), and so does the
query-parameter rule: at most ``TRAPS_MAX_QUERY_VARIANTS`` distinct query strings a
path, counted by this node (a cluster may let up to that many a node through). A cut URL costs no fetch
and no queue entry; it gets one record of fate ``trap`` (its rule as the error),
so ``scrapy pages --fate trap`` lists what the defences cut, and is counted in
``traps/<rule>``; each URL is recorded once a node (the last ``MEMORY`` of them).
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from scrapy import Request

from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.items import PageRecord
from crawler.meta import NODE
from crawler.policy.sessionids import session_keys
from crawler.policy.traps import (
    TrapsConfig,
    calendar_walk,
    canonical_url,
    is_session_param,
    query_variant_key,
    too_many_variants,
    trap_of,
)
from crawler.signals import trap_cut
from crawler.spiders.pagerecords import host_or_empty, now

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Paths whose query strings are counted, cut URLs and hosts' session keys
# remembered, by this node: the least recently seen are forgotten first.
MEMORY = 10_000


class TrapFilterMiddleware:
    def __init__(self, crawler: Crawler, config: TrapsConfig) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._config = config
        self._variants: OrderedDict[str, set[bytes]] = OrderedDict()
        self._cut: OrderedDict[str, None] = OrderedDict()
        self._session_hosts: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._once = OnceLogger(logger, crawler)
        self._signals = crawler.signals

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = TrapsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config)

    def process_spider_output(
        self, response: Response, result: Iterable[Any]
    ) -> Iterator[Any]:
        outputs = list(result)
        yield from self._all_filtered(response, outputs)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        outputs = [output async for output in result]
        for kept in self._all_filtered(response, outputs):
            yield kept

    def _all_filtered(self, response: Response, outputs: list[Any]) -> Iterator[Any]:
        """Each of a page's *outputs* as it goes on; all of them are needed first,
        since a session key is told from the whole page's links."""
        today = datetime.now(UTC).date()
        sessions = self._sessions_of(response, outputs)
        for output in outputs:
            yield from self._filtered(response, output, today, sessions)

    def _sessions_of(self, response: Response, outputs: list[Any]) -> frozenset[str]:
        """The session keys no name gives that the page's links carry, or that
        its host's pages carried before (a page with few links tells nothing)."""
        if not (self._config.canonicalize and self._config.detect_sessions):
            return frozenset()
        host = host_or_empty(response.url)
        known = self._session_hosts.get(host, frozenset())
        links = [output.url for output in outputs if isinstance(output, Request)]
        found = {
            key
            for key in session_keys(response.url, links)
            if not is_session_param(key, self._config)  # dropped already
        }
        if found - known:
            self._once.event(
                "traps/session_keys",
                "Links of %(url)s carry a session id under %(keys)s: dropped from "
                "its host's links; further keys found are counted in "
                "traps/session_keys",
                {"url": response.url, "keys": ", ".join(sorted(found))},
                level=logging.INFO,
                key="session",
                count=len(found - known),
            )
            known |= found
            self._session_hosts[host] = known
            if len(self._session_hosts) > MEMORY:
                self._session_hosts.popitem(last=False)
        if known:
            self._session_hosts.move_to_end(host)
        return known

    def _filtered(
        self, response: Response, output: Any, today: date, sessions: frozenset[str]
    ) -> Iterator[Any]:
        """*output* as it goes on: a request written canonically, or the record of a
        cut one (none if that URL was recorded before); anything else as it is."""
        if not isinstance(output, Request):
            yield output
            return
        url = canonical_url(output.url, self._config, sessions)
        if url != output.url:
            self._stats.inc_value("traps/canonicalized")
            output = output.replace(url=url)
        rule = (
            trap_of(url, self._config, today)
            or calendar_walk(response.url, url, self._config, today)
            or self._query_explosion(url)
        )
        if rule is None:
            yield output
            return
        self._once.event(
            f"traps/{rule}",
            "Cut %(url)s (%(rule)s) before it was queued; further URLs cut are "
            "counted in traps/<rule> and listed by scrapy pages --fate trap",
            {"url": url, "rule": rule},
            level=logging.INFO,
            key="cut",
        )
        self._signals.send_catch_log(trap_cut, url=url, rule=rule)
        if self._first_cut(url):
            self._stats.inc_value("bfs/fate_count/trap")  # URLs recorded, by fate
            yield _trap_record(response, url, rule)

    def _query_explosion(self, url: str) -> str | None:
        """``query_variants`` if *url*'s path has had too many query strings here."""
        limit = self._config.max_query_variants
        query = url.partition("?")[2]
        if not limit or not query:
            return None
        key = query_variant_key(url)
        seen = self._variants.get(key)
        if seen is None:
            seen = self._variants[key] = set()
            if len(self._variants) > MEMORY:
                self._variants.popitem(last=False)
        self._variants.move_to_end(key)
        digest = hashlib.blake2b(query.encode("utf-8", "replace"), digest_size=8)
        variant = digest.digest()
        if variant in seen:
            return None
        if too_many_variants(len(seen), self._config):
            return "query_variants"
        seen.add(variant)
        return None

    def _first_cut(self, url: str) -> bool:
        """Whether *url* was not cut (and recorded) by this node lately."""
        if url in self._cut:
            self._cut.move_to_end(url)
            return False
        self._cut[url] = None
        if len(self._cut) > MEMORY:
            self._cut.popitem(last=False)
        return True


def _trap_record(response: Response, url: str, rule: str) -> PageRecord:
    """The record of a link cut as a trap: never fetched, its rule as the error."""
    return PageRecord(
        url=url,
        status=0,
        depth=int(response.meta.get("depth", 0)) + 1,
        title=None,
        content_type=None,
        length=0,
        links=0,
        fetched_at=now(),
        host=host_or_empty(url),
        node=response.meta.get(NODE, ""),
        error=rule,
        fate="trap",
    )
