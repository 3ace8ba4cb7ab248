"""RenderLearner: what ``RENDER_MODE = auto`` learns from its samples.

A sample's outcome (what its rendered page had that its static document had not,
measured by ``crawler.render.sampler``) is counted in Redis for its host and its URL
pattern; a level with its samples in is decided (render, static, mixed, or sampled
again when a re-check disagrees) by the rules of ``crawler.render.adaptive``, and the
change written and logged. A page fetched statically while its host was undecided is
parked in Redis (at most ``MAX_PARKED`` per host) and rendered if the decision says
rendering pays: its links would be lost otherwise.

The advisor (``crawler.render.advisor``) answers requests; this is the other half,
learning, in a class of its own because the two share only the Redis state and the
node's copy of each host's decisions. The learner is given the state and the two
things it does to that copy (store a host's record Redis answered with, forget a
host a decision changed), not the advisor.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from crawler.frontier.encoding import codec
from crawler.policy.hosts import BadURLError
from crawler.render.adaptive import after_outcome, parked_fate, sample_pays
from crawler.render.levels import HOST, HostRecord, key_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.render.adaptive import Change
    from crawler.render.config import RenderConfig
    from crawler.render.levels import DecisionKey, LevelRecord
    from crawler.render.state import RenderState

logger = logging.getLogger(__name__)

# Pages of one host parked for its decision at most (the rest stay static).
MAX_PARKED = 200


class RenderLearner:
    """Counts samples' outcomes, decides levels, parks and releases pages (see the
    module)."""

    def __init__(  # noqa: PLR0913 (what it is given, all of it, named)
        self,
        crawler: Crawler,
        config: RenderConfig,
        state: RenderState,
        *,
        stats: StatsCollector,
        clock: Callable[[], float],
        store: Callable[[str, dict[bytes, bytes]], HostRecord],
        forget: Callable[[str], None],
    ) -> None:
        # The crawler's spider encodes and decodes parked pages.
        self._crawler = crawler
        self._config = config
        self._state = state
        self._stats = stats
        self._clock = clock
        # Keep a host's record Redis answered with in the node's copy; drop a host
        # from it (read again on its next request).
        self._store = store
        self._forget = forget

    async def record_sample(
        self, url: str, *, gained_links: int, gained_text: float
    ) -> list[Request]:
        """Count one sample's outcome for its host and pattern, and decide the
        levels it completes. Returns the parked pages the decision sends to be
        rendered. Waits while Redis is away."""
        try:
            key = key_of(url)
        except BadURLError:
            return []
        pays = sample_pays(
            self._config, gained_links=gained_links, gained_text=gained_text
        )
        if not pays:
            self._stats.inc_value("render/static_enough")
        args = ["paid" if pays else "static", gained_links, HOST, key.pattern]
        record = self._store(key.host, await self._state.record(key.host, args))
        return await self._settle(key, record)

    async def park(self, again: Request) -> bool:
        """Keep *again* (the rendered fetch of a page fetched statically while its
        host was undecided) for the decision; True if the decision is in already
        and says render (then it is the caller's to send)."""
        try:
            key = key_of(again.url)
            entry = codec.encode(again, self._crawler.spider)  # type: ignore[arg-type]
        except (BadURLError, codec.UnencodableRequestError):
            return False
        field = f"{key.pattern} {again.url}"
        reply = await self._state.park(
            key.host, [key.pattern, field, entry, MAX_PARKED]
        )
        if reply == "parked":
            self._stats.inc_value("render/parked_pages")
        return reply == "render"

    async def _settle(self, key: DecisionKey, record: HostRecord) -> list[Request]:
        """Write what the new outcome makes of the host's and pattern's levels;
        the parked pages a decision sends to be rendered."""
        now = self._clock()
        changes: list[tuple[str, Change, LevelRecord]] = []
        for level in (HOST, key.pattern):
            current = record.level(level)
            found = after_outcome(
                current, level=level, now=now, pages=self._config.sample_pages
            )
            if found is not None:
                changes.append((level, *found))
        if not changes:
            return []
        await self._state.settle(key.host, changes)
        self._forget(key.host)  # read again on its next request
        levels = dict(record.levels)
        levels.update((level, new) for level, _, new in changes)
        settled = HostRecord(levels)
        for level, change, new in changes:
            # A pattern's decision is kept from the first, but it applies (and is
            # worth a line) only once its host is mixed.
            if level == HOST or settled.level(HOST).decision == "mixed":
                _log_change(key.host, level, change, new, record.level(level))
        return await self._release_parked(key.host, settled)

    async def _release_parked(self, host: str, record: HostRecord) -> list[Request]:
        render, static = parked_fate(record)
        await self._state.take(host, static)
        entries = await self._state.take(host, render)
        requests = []
        for entry in entries:
            try:
                requests.append(codec.decode(entry, self._crawler.spider))  # type: ignore[arg-type]
            except codec.BadEntryError as exc:
                self._state.bad(1, f"a parked page of host {host}: {exc}")
        if requests:
            self._stats.inc_value("render/late_pages", len(requests))
        return requests


def _log_change(
    host: str, level: str, change: Change, decided: LevelRecord, seen: LevelRecord
) -> None:
    where = f"host {host}" if level == HOST else f"{host} pattern {level}"
    if change == "reset":
        logger.info(
            "Re-check of %(where)s disagrees with its decision: sampling it again",
            {"where": where},
        )
    elif decided.decision == "render":
        logger.info(
            "Rendering %(where)s: %(samples)d samples found %(links)d links static "
            "fetches missed",
            {"where": where, "samples": seen.samples, "links": seen.links},
        )
    elif decided.decision == "static":
        logger.info(
            "%(where)s is static enough (%(samples)d samples)",
            {"where": where[0].upper() + where[1:], "samples": seen.samples},
        )
    else:
        logger.info(
            "Host %(host)s mixes pages rendering helps with and pages it does not "
            "(%(paid)d of %(samples)d samples paid): deciding per URL pattern",
            {"host": host, "paid": seen.paid, "samples": seen.samples},
        )
