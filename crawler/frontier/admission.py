"""Which requests enter the frontier, and in what form.

Every check that needs no Redis happens here, before a request costs a round trip:
the depth limit, a usable host, and the local cache of fingerprints already pushed.
What passes is encoded and addressed (shard, host, BFS level, dedup argument). A
request the frontier cannot store is refused here, loudly, not lost in the engine.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.frontier.dedup import bloom_hashes, most_hashes
from crawler.frontier.encoding import codec
from crawler.frontier.importance import InLinks, credit_of
from crawler.frontier.store.roundtrip import Pending
from crawler.meta import (
    HOLD_UNTIL,
    LINK_CHECKED,
    LINK_CREDIT,
    REVISIT,
    REVIVE,
    STARTED,
    TIER,
)
from crawler.policy.hosts import BadURLError, host_of, shard_key
from crawler.policy.order import TIERS_PER_DEPTH, depth_allowed, level_of
from crawler.policy.sharding import shard_of

# Bytes of a fingerprint that name a request queued at a provisional depth: 64 bits,
# so two URLs of one shard share a key with odds of about n / 2**64.
DEPTH_KEY_BYTES = 8

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from crawler.context.runsettings import RunSettingsHolder
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.policy.importance import LinkCredit

logger = logging.getLogger(__name__)


class Admission:
    def __init__(
        self,
        crawler: Crawler,
        spider: Spider,
        config: FrontierConfig,
        run: RunSettingsHolder,
        on_duplicate: Callable[[Request], None] = lambda request: None,
    ) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._fingerprinter = crawler.request_fingerprinter
        self._spider = spider
        self._config = config
        self._run = run  # DEPTH_LIMIT may change while the crawl runs
        self._sites = CrawlContext.of(crawler).sites  # a host's own depth limit
        self._on_duplicate = on_duplicate
        # Shared with the bfs spider, which checks its links itself (LINK_CHECKED).
        self._seen = CrawlContext.of(crawler).seen
        self._importance = config.importance
        # Importance order: in-links of URLs pushed before, until they are sent.
        self.in_links = (
            None if config.importance is None else InLinks(config.importance.config)
        )
        self._duplicates = 0
        # One line per (callback, part, type) of refusal: the rest are counted.
        self._once = OnceLogger(logger, crawler)
        # Enough hashes for the filter of a shard that needs the most.
        self._hashes = most_hashes(config.dedup, config.shards)

    def admit(self, request: Request) -> Pending | None:
        """The request ready to push, or None (counted) if it must not be queued.

        In importance order a link this node pushed before is not queued again, yet
        it is an in-link: it goes to ``in_links``, which Redis adds to the URL's
        importance while it waits."""
        credit = credit_of(request.meta.pop(LINK_CREDIT, None))
        checked = request.meta.pop(LINK_CHECKED, False)
        depth = request.meta.get("depth", 0)
        if not self._within_depth_limit(request.url, depth):
            return None
        dedup: str | bytes = ""
        revive = depth_key = ""
        fingerprint = None
        if not request.dont_filter or _first_start(request):
            if request.meta.get("is_start_request"):  # its later copies (retries)
                request.meta[STARTED] = True  # are dont_filter: they pass
            fingerprint = self._fingerprinter.fingerprint(request)
            if is_seed(request):  # Redis decides: it may have failed for good
                self._seen.add(fingerprint, depth)
                revive = fingerprint.hex()
            elif not checked and not self._seen.add(fingerprint, depth):
                self._duplicates += 1  # most links: counted in bulk, at the next flush
                self._on_duplicate(request)
                if credit is not None:  # importance order: still an in-link
                    self.in_link(request.url, credit)
                return None
            dedup = self._dedup_argument(fingerprint)
            depth_key = self._depth_key(fingerprint)
        if (address := self._address(request.url)) is None:
            return None
        host, shard, deepest_first = address
        hold = request.meta.pop(HOLD_UNTIL, None)
        try:
            entry = codec.encode(request, self._spider, host)
        except codec.UnencodableRequestError as exc:
            self._refuse(request, exc, request.url if checked else fingerprint)
            return None
        level = level_of(depth, tier_of(request))
        hold_until = float(hold) if isinstance(hold, int | float) else None
        ranked: dict[str, Any] = {}
        if self._importance is not None:
            # A seed, and a revisit of a known page, start as a seed does.
            known = is_seed(request) or REVISIT in request.meta
            ranked = self._importance.pending_fields(request, credit, known)
        return Pending(
            shard,
            host,
            level,
            dedup,
            entry,
            hold_until,
            revive,
            "" if deepest_first else depth_key,
            priority=request.priority,
            request=request,
            deepest_first=deepest_first,
            **ranked,
        )

    @property
    def takes_plain_seeds(self) -> bool:
        """Whether ``admit_plain_seed`` may stand for ``admit``: not in importance
        order, whose fields are the request's."""
        return self._importance is None

    def admit_plain_seed(
        self, url: str, fingerprint: bytes, entry_of: Callable[[str, str], str]
    ) -> Pending | None:
        """What ``admit`` makes of a plain seed, ``Request(url, meta={REVIVE:
        True})`` (``takes_plain_seeds``), given its fingerprint and what gives its
        codec entry from the URL and its host (``codec.plain_get_entries``; issue
        27: bulk seeding builds no Request): the same checks, counts and fields,
        without the request to drop loudly."""
        if not self._within_depth_limit(url, 0):
            return None
        self._seen.add(fingerprint, 0)  # a seed: Redis decides (revive)
        dedup = self._dedup_argument(fingerprint)
        if (address := self._address(url)) is None:
            return None
        host, shard, deepest_first = address
        return Pending(
            shard,
            host,
            level_of(0, 0),
            dedup,
            entry_of(url, host),
            None,
            fingerprint.hex(),
            "" if deepest_first else self._depth_key(fingerprint),
            deepest_first=deepest_first,
        )

    def _within_depth_limit(self, url: str, depth: int) -> bool:
        """Whether *url* at *depth* is within its site's depth limit (else counted)."""
        limit = self._sites.depth_limit_of_url(url, self._run.current.depth_limit)
        if depth_allowed(depth, limit):
            return True
        self._stats.inc_value("frontier/depth_limited")
        return False

    def _address(self, url: str) -> tuple[str, int, bool] | None:
        """The host of *url*, its shard, and whether it is crawled deepest first;
        None (counted) for a URL without a usable host.

        A host crawled deepest first goes down its chains on purpose: its pages
        keep the depth they are found at (within their limit), and depth repair,
        which would fetch them again and again as shorter paths turn up, leaves
        them alone (its requests get no depth key)."""
        try:
            host = host_of(url)
        except BadURLError:
            self._stats.inc_value("frontier/bad_urls")
            return None
        shard = shard_of(shard_key(host, self._config.shard_by), self._config.shards)
        return host, shard, self._sites.strategy_of(host) == "dfs"

    def _depth_key(self, fingerprint: bytes) -> str:
        """The short fingerprint depth repair keys a request by ('' when off)."""
        return fingerprint[:DEPTH_KEY_BYTES].hex() if self._config.depth_repair else ""

    def in_link(self, url: str, credit: LinkCredit) -> None:
        """*url*, pushed before, found linked again with *credit* (importance
        order): held in ``in_links`` until they are sent. A URL without a usable
        host is ignored."""
        if self.in_links is None:
            return
        try:
            host = host_of(url)
        except BadURLError:
            return
        shard = shard_of(shard_key(host, self._config.shard_by), self._config.shards)
        self.in_links.add(shard, host, url, credit)

    def _refuse(
        self,
        request: Request,
        error: codec.UnencodableRequestError,
        seen_key: bytes | str | None,
    ) -> None:
        """Count a request that cannot be stored; log the first of each kind.

        Its key (fingerprint, or the URL the spider checked) leaves the local cache
        (never pushed, it must not hide the same URL yielded later with values that
        can be stored).
        """
        if seen_key is not None:
            self._seen.discard(seen_key)
        callback = callback_name(request)
        self._once.event(
            "frontier/unencodable",
            "Refused %(request)s from callback %(callback)s: %(where)s holds a value "
            "of type %(type)s, which the frontier cannot store (%(reason)s). Meta and "
            "cb_kwargs may hold JSON values, tuples, bytes, sets, dates and times, "
            "Decimal, UUID, and Items and dataclasses of the spider's modules. Further "
            "refusals like it are only counted in frontier/unencodable",
            {
                "request": request,
                "callback": callback,
                "where": error.where,
                "type": error.value_type,
                "reason": error.reason,
            },
            level=logging.ERROR,
            key=(callback, error.where, error.value_type),
        )

    def count_duplicates(self, count: int) -> None:
        """Count *count* duplicates found in Redis, and those found here since."""
        count, self._duplicates = count + self._duplicates, 0
        if count:
            self._stats.inc_value("dupefilter/filtered", count)
            self._stats.inc_value("frontier/duplicates", count)

    def _dedup_argument(self, fingerprint: bytes) -> str | bytes:
        """What the push script's seen check takes: the fingerprint, or its hashes."""
        if self._config.dedup.mode == "exact":
            return fingerprint
        return bloom_hashes(fingerprint, self._hashes)


def _first_start(request: Request) -> bool:
    """A start request on its way in: Scrapy makes them ``dont_filter``, yet every
    node of the crawl yields them, so they are filtered (one fetch in the crawl).
    Its later copies (Scrapy's retries, tried again later) are not."""
    return bool(request.meta.get("is_start_request")) and STARTED not in request.meta


def is_seed(request: Request) -> bool:
    """A start request, or a URL given to a running crawl (``scrapy frontier seed``):
    queued again if it failed for good before, whatever the seen filter says."""
    return bool(request.meta.get("is_start_request") or request.meta.get(REVIVE))


def callback_name(request: Request) -> str:
    """The callback's qualified name, for log lines (``parse``: Scrapy's default)."""
    if request.callback is None:
        return "parse"
    return str(getattr(request.callback, "__qualname__", repr(request.callback)))


def tier_of(request: Request) -> int:
    """The timeout tier a request is queued at (``meta[TIER]``, set on timeouts)."""
    tier = request.meta.get(TIER, 0)
    if not isinstance(tier, int) or isinstance(tier, bool):
        return 0
    return min(max(tier, 0), TIERS_PER_DEPTH - 1)
