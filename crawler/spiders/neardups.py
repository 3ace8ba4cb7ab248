"""NearDuplicatesMiddleware: a page whose text is nearly that of another page of
its host (a printer-friendly copy, a mirror under another URL) is marked so, and
what such pages teach about the host's URLs is put to use.

Each HTML page's record carries the SimHash of its text (``PageRecord.text_hash``).
This spider middleware looks it up in its host's banded index in Redis
(``CrawlKeys.near_duplicates``: one hash a host, a field a band value,
``crawler.policy.simhash.bands``), so every node sees the pages every other node
fetched: a page within
``NEARDUP_MAX_DISTANCE`` bits of another URL's page is a near-duplicate (its record's
``near_duplicate``, ``neardup/pages``, and one of its host's ``traps``). Then its own
fingerprint joins the index, and its fingerprint and links signature the host's
hash of indexed pages by URL key (``CrawlKeys.near_duplicate_urls``; no URL is kept
in Redis). Two nodes fetching two copies at the same
instant may both miss the other; a revisit never matches its own URL. The index of
a host expires a week after its last page.

The index is compact (issue 27): a page is a 14-byte record (its SimHash and URL
key) in each of its bands' fields, appended by one script call (``ADD_TO_BANDS``);
a field keeps its latest ``RECORDS_PER_BAND`` records, so a host's index is bounded
(a few MB) and costs 110-560 bytes a page (``bench.neardupindex``). On a host of
tens of thousands of pages the fullest fields start to forget their oldest pages,
which are then no longer matched. Without Redis the page is recorded unmarked and
its links go on as they are.

What near-duplicates teach (``crawler.policy.duplicateurls``):

- a **copy** (a near-duplicate whose links, read from its own place, are its
  original's) has its links dropped, unless ``NEARDUP_COPY_LINKS``
  (``neardup/copy_links_dropped``); the spider is told, so that another page's link
  to one of them is still followed;
- a page whose URL without one query pair or one run of path segments was fetched
  too is evidence for that rewrite rule when the two are near-duplicates, and
  contradicts it for good when they are different pages (``crawler.crawlstate.urlrules``);
  and two views of one listing by other keys (``?color=red``, ``?size=s``) that are
  near-duplicates of each other are evidence for the listing's query rule, when the
  listing was fetched and is no different page (an entry keeps its query's view);
  once a rule has ``NEARDUP_RULE_SUPPORT`` pieces of evidence, every new link of the
  host it fits is rewritten before it is queued (``neardup/links_rewritten``), so
  the frontier sees the page's known URL and drops it as seen;
- a host whose recent pages here are mostly near-duplicates (``NEARDUP_HOST_SHARE``
  of its last ``NEARDUP_HOST_WINDOW``, ``crawler.policy.simhash.lowered_budget``)
  has its budget lowered to what is queued: its pages' links to itself are not
  queued (``traps/neardup_budget``, its ``traps``, one log line a host) until its
  recent pages are no longer mostly near-duplicates.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import Request

from crawler.context.asyncclient import LazyAsyncClient
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.items import PageRecord
from crawler.meta import LINK_CHECKED, LINKS_SIGNATURE
from crawler.policy.duplicateurls import (
    DIFFERENT_PAGES,
    Evidence,
    QueryView,
    query_view,
    removals,
    rewrite,
    url_key,
)
from crawler.policy.simhash import (
    NearDupConfig,
    bands,
    decode,
    hamming,
    lowered_budget,
)
from crawler.signals import trap_cut
from crawler.spiders.pagerecords import host_or_empty

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from typing import Self, TypeVar

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    T = TypeVar("T")

logger = logging.getLogger(__name__)

KEPT_FOR = 7 * 86_400  # seconds a host's index outlives its last page
# A page in a band's field: its SimHash (8 bytes) and URL key (6), big-endian.
RECORD_BYTES = 14
# Records a band's field keeps, the latest: with 2**9-2**10 values a band (at the
# default distance), a field fills up on a host of some 20,000 pages or more.
RECORDS_PER_BAND = 64
# Append a page's record to each of its bands' fields (unless there already: a
# revisit of an unchanged page), keep each field's latest records, and renew the
# hash's TTL. KEYS[1]: the host's bands hash; ARGV: TTL, records kept, the
# record, then the page's bands.
ADD_TO_BANDS = """
local key, size = KEYS[1], #ARGV[3]
local kept, record = tonumber(ARGV[2]) * size, ARGV[3]
for i = 4, #ARGV do
  local value = redis.call('HGET', key, ARGV[i]) or ''
  local known = false
  for at = #value % size + 1, #value - size + 1, size do
    if string.sub(value, at, at + size - 1) == record then known = true break end
  end
  if not known then
    value = value .. record
    if #value > kept then value = string.sub(value, #value - kept + 1) end
    redis.call('HSET', key, ARGV[i], value)
  end
end
redis.call('EXPIRE', key, ARGV[1])
"""
HOSTS_KEPT = 10_000  # hosts whose recent pages a node counts, least recent dropped


@dataclass(slots=True)
class Looked:
    """What the index said of a page: a near-duplicate, a copy, and the evidence
    for and against rules about its host's URLs."""

    near: bool = False
    copy: bool = False
    evidence: list[tuple[Evidence, bool]] = field(default_factory=list)


class NearDuplicatesMiddleware:
    def __init__(self, crawler: Crawler, config: NearDupConfig) -> None:
        assert crawler.spider is not None
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._keys = CrawlKeys.of(crawler.settings, crawler.spider.name)
        self._redis = LazyAsyncClient(crawler)
        self._rules = CrawlContext.of(crawler).url_rules
        self._gate = CrawlContext.of(crawler).outage.gate("near-duplicates")
        self._once = OnceLogger(logger, crawler)
        # Each host's recent pages here (True: a near-duplicate), least recent host
        # forgotten first, and the hosts whose budget is lowered now.
        self._recent: OrderedDict[str, deque[bool]] = OrderedDict()
        self._lowered: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = NearDupConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, config)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        dropped: list[str] = []
        copy = False
        host = host_or_empty(response.url)
        async for output in result:
            if isinstance(output, PageRecord) and self._looked_for(output):
                looked = await self._look(output, response)
                output.near_duplicate = looked.near
                copy = looked.copy and not self._config.copy_links
                self._count(output.host, looked.near)
            elif isinstance(output, Request) and self._config.enabled:
                if copy:
                    dropped.append(output.url)
                    continue
                if host in self._lowered and host_or_empty(output.url) == host:
                    self._over_lowered_budget(output.url)
                    dropped.append(output.url)
                    continue
                yield await self._rewritten(output)
                continue
            yield output
        if copy and dropped:
            self._links_dropped(response, dropped)
        elif dropped:
            self._forget(dropped)

    def _looked_for(self, record: PageRecord) -> bool:
        return (
            self._config.enabled
            and record.fate == "fetched"
            and record.text_hash is not None
            and bool(record.host)
        )

    async def _look(self, record: PageRecord, response: Response) -> Looked:
        """Whether *record*'s page is near another URL's page of its host, a copy of
        one, and what that says of the host's URLs; the page joins the index
        either way. Nothing is found while Redis is away."""
        assert record.text_hash is not None
        try:
            fingerprint = decode(record.text_hash)
        except ValueError:
            return Looked()
        if not self._gate.ready(time.time()):
            self._stats.inc_value("neardup/errors")  # Redis is away: unmarked
            return Looked()
        links = str(response.meta.get(LINKS_SIGNATURE, ""))
        page = _Page(record, fingerprint, links, query_view(record.url))
        looked = await self._tried(lambda: self._looked_up(page))
        if looked is None:
            return Looked()
        if looked.near:
            self._stats.inc_value("neardup/pages")
            self._crawler.signals.send_catch_log(
                trap_cut, url=record.url, rule="near_duplicate"
            )
        if looked.evidence:
            learnt = await self._tried(
                lambda: self._rules.learn(record.host, looked.evidence)
            )
            for rule in learnt or []:
                self._learnt(record.host, rule)
        return looked

    async def _looked_up(self, page: _Page) -> Looked:
        """The index's answer for *page*, which is then added to it."""
        page_bands = bands(page.fingerprint, self._config.max_distance)
        bands_key = self._keys.near_duplicates(page.host)
        urls_key = self._keys.near_duplicate_urls(page.host)
        checks = list(removals(page.url)) if self._rules.enabled else []
        pipe = self._redis().pipeline(transaction=False)
        pipe.hmget(bands_key, page_bands)
        pipe.hmget(urls_key, [url_key(url) for _, url in checks] or ["-"])
        fields, checked = await pipe.execute()
        twins = {
            url_key
            for other, url_key in _candidates(fields)
            if url_key != page.key
            and hamming(page.fingerprint, other) <= self._config.max_distance
        }
        looked = Looked(near=bool(twins))
        looked.evidence = self._checked(page, checks, checked)
        if twins:
            listing = self._listing_alike(page, checks, checked)
            await self._compare(page, sorted(twins), urls_key, looked, listing)
        await self._add(page, page_bands, bands_key, urls_key)
        return looked

    def _checked(
        self, page: _Page, checks: list[tuple[Evidence, str]], entries: list[Any]
    ) -> list[tuple[Evidence, bool]]:
        """For each removal (a query pair, a run of segments) that turns the page's
        URL into one in the index: evidence for the rule if that page is near this
        one, against it if it is a different page."""
        found = []
        for (evidence, _), entry in zip(checks, entries, strict=False):
            indexed = _Indexed.parse(entry)
            if indexed is None:
                continue
            apart = hamming(page.fingerprint, indexed.fingerprint)
            if apart <= self._config.max_distance:
                found.append((evidence, True))
            elif apart >= DIFFERENT_PAGES:
                found.append((evidence, False))
        return found

    def _listing_alike(
        self, page: _Page, checks: list[tuple[Evidence, str]], entries: list[Any]
    ) -> bool:
        """Whether the page's URL without its query was fetched and is no different
        page (``DIFFERENT_PAGES``): then its siblings may teach the path's query
        rule, which a listing unlike its own filters would contradict."""
        if page.view is None:
            return False
        for (evidence, _), entry in zip(checks, entries, strict=False):
            if evidence.rule == page.view.rule:
                indexed = _Indexed.parse(entry)
                return indexed is not None and (
                    hamming(page.fingerprint, indexed.fingerprint) < DIFFERENT_PAGES
                )
        return False

    async def _compare(
        self,
        page: _Page,
        twins: list[str],
        urls_key: str,
        looked: Looked,
        listing_alike: bool,
    ) -> None:
        """Whether one of *twins* (url keys) has the page's links: a copy; and,
        when *listing_alike*, whether one is another view of the page's listing
        by other keys: evidence for the listing's query rule from both."""
        view = page.view
        for entry in await self._redis().hmget(urls_key, twins):
            twin = _Indexed.parse(entry)
            if twin is None:
                continue
            looked.copy |= bool(page.links) and twin.links == page.links
            if listing_alike and view is not None and twin.view:
                where = view.sibling(twin.view)
                if where is not None:
                    looked.evidence.append((Evidence(view.rule, view.where), True))
                    looked.evidence.append((Evidence(view.rule, where), True))

    async def _add(
        self, page: _Page, page_bands: list[str], bands_key: str, urls_key: str
    ) -> None:
        pipe = self._redis().pipeline(transaction=False)
        pipe.eval(
            ADD_TO_BANDS, 1, bands_key, KEPT_FOR, RECORDS_PER_BAND, page.band_record,
            *page_bands,
        )  # fmt: skip
        pipe.hset(urls_key, page.key, page.entry)
        pipe.expire(urls_key, KEPT_FOR)
        await pipe.execute()

    async def _rewritten(self, request: Request) -> Request:
        """*request* with its host's learnt rules applied to its URL."""
        host = host_or_empty(request.url)
        if not self._rules.enabled or not host or not self._gate.ready(time.time()):
            return request
        rules = self._rules.cached(host)
        if rules is None:  # only a call that reached Redis tells the gate it answers
            rules = await self._tried(lambda: self._rules.of(host)) or frozenset()
        url = rewrite(request.url, rules)
        if url == request.url:
            return request
        self._stats.inc_value("neardup/links_rewritten")
        self._crawler.signals.send_catch_log(trap_cut, url=request.url, rule="rewrite")
        rewritten = request.replace(url=url)
        # The spider checked the link, not its rewrite: the frontier's own local
        # check drops it without a round trip once it has been queued.
        rewritten.meta.pop(LINK_CHECKED, None)
        return rewritten

    def _links_dropped(self, response: Response, urls: list[str]) -> None:
        self._once.event(
            "neardup/copy_links_dropped",
            "%(url)s is a copy of another page of its host (its text and its links): "
            "its links are not followed; further ones are counted in "
            "neardup/copy_links_dropped",
            {"url": response.url},
            level=logging.INFO,
            key="copy",
            count=len(urls),
        )
        self._forget(urls)

    def _forget(self, urls: list[str]) -> None:
        """A spider that remembers the links it yielded (bfs) forgets *urls*, so
        that another page's link to one of them is still followed."""
        forget = getattr(self._crawler.spider, "links_not_followed", None)
        if callable(forget):
            forget(urls)

    def _count(self, host: str, near: bool) -> None:
        """Add a page of *host* to its recent pages; lower its budget when most of
        them are near-duplicates (``NEARDUP_HOST_SHARE`` of the last
        ``NEARDUP_HOST_WINDOW``), raise it again when they no longer are."""
        recent = self._recent.get(host)
        if recent is None:
            recent = self._recent[host] = deque(maxlen=self._config.host_window)
            if len(self._recent) > HOSTS_KEPT:
                forgotten, _ = self._recent.popitem(last=False)
                self._lowered.discard(forgotten)
        self._recent.move_to_end(host)
        recent.append(near)
        lowered = lowered_budget(recent, self._config)
        if lowered and host not in self._lowered:
            self._lowered.add(host)
            self._once.event(
                "neardup/budgets_lowered",
                "%(host)s: %(near)d of its last %(pages)d pages were near-duplicates "
                "(NEARDUP_HOST_SHARE): its new links are not queued while that "
                "lasts (traps/neardup_budget); further hosts are counted in "
                "neardup/budgets_lowered",
                {"host": host, "near": sum(recent), "pages": len(recent)},
                level=logging.INFO,
                key=("lowered", host),
            )
        elif not lowered and host in self._lowered:
            self._lowered.discard(host)

    def _over_lowered_budget(self, url: str) -> None:
        self._stats.inc_value("traps/neardup_budget")
        self._crawler.signals.send_catch_log(trap_cut, url=url, rule="neardup_budget")

    def _learnt(self, host: str, rule: str) -> None:
        self._once.event(
            "neardup/rules_learnt",
            "Learnt from near-duplicates on %(host)s: %(rule)s leaves a page the same, "
            "so links with it are rewritten without it; further rules are counted in "
            "neardup/rules_learnt",
            {"host": host, "rule": rule},
            level=logging.INFO,
            key="rule",
        )

    async def _tried(self, call: Callable[[], Awaitable[T]]) -> T | None:
        """*call*'s answer (on fresh connections after a Redis restart), or None
        if Redis failed."""
        try:
            answer = await self._redis.fresh(call)
        except REDIS_ERRORS as exc:
            self._failed(exc)
            return None
        self._gate.succeeded()
        return answer

    def _failed(self, error: Exception) -> None:
        """An outage is the crawl's to report (one line for every component);
        anything else is logged here once. Either way the page goes unmarked."""
        if is_outage(error):
            self._stats.inc_value("neardup/errors")
            self._gate.failed(error, time.time())
            return
        self._once.event(
            "neardup/errors",
            "Could not look for near-duplicates in Redis (%(error)s): pages are "
            "recorded unmarked; further ones are counted in neardup/errors",
            {"error": error},
        )


@dataclass(frozen=True, slots=True)
class _Page:
    """A fetched page as the index knows it."""

    record: PageRecord
    fingerprint: int
    links: str
    view: QueryView | None  # its query as a view of its path's listing

    @property
    def url(self) -> str:
        return self.record.url

    @property
    def host(self) -> str:
        return self.record.host

    @property
    def key(self) -> str:
        return url_key(self.record.url)

    @property
    def band_record(self) -> bytes:
        """The page in its bands' fields: SimHash and URL key, 14 bytes."""
        return self.fingerprint.to_bytes(8, "big") + bytes.fromhex(self.key)

    @property
    def entry(self) -> str:
        """Its SimHash, links signature and, for a URL with a query, its view."""
        view = self.view.entry if self.view is not None else ""
        kept = f" {view}" if view and len(view) <= 200 else ""
        return f"{self.record.text_hash} {self.links or '-'}{kept}"


@dataclass(frozen=True, slots=True)
class _Indexed:
    """A page of the host's hash of indexed URLs (its key is the URL's)."""

    fingerprint: int
    links: str
    view: str = ""

    @classmethod
    def parse(cls, entry: bytes | str | None) -> _Indexed | None:
        """The entry, or None for none or one this crawler did not write."""
        if entry is None:
            return None
        text = entry.decode("utf-8", "replace") if isinstance(entry, bytes) else entry
        parts = text.split(" ")
        if len(parts) not in (2, 3):
            return None
        try:
            fingerprint = decode(parts[0])
        except ValueError:
            return None
        view = parts[2] if len(parts) == 3 else ""
        return cls(fingerprint, "" if parts[1] == "-" else parts[1], view)


def _candidates(fields: list[Any]) -> list[tuple[int, str]]:
    """The fingerprints (and URL keys) of the pages in the page's bands' fields.
    A field whose length is not a whole number of records was cut or damaged: its
    leading bytes are skipped, as ``ADD_TO_BANDS`` skips them."""
    found = []
    for value in fields:
        if not isinstance(value, bytes):
            continue  # no page has that band yet
        for at in range(len(value) % RECORD_BYTES, len(value), RECORD_BYTES):
            record = value[at : at + RECORD_BYTES]
            found.append((int.from_bytes(record[:8], "big"), record[8:].hex()))
    return found
