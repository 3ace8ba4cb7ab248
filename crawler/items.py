"""PageRecord: what the spider yields for every URL it was given: its one fate.

The pipelines add to it (``store_path``) and read it; ``body`` travels to the page
store but is never exported (``EXPORTED``, the bfs spider's ``FEED_EXPORT_FIELDS``,
lists every other field). ``DepthRepair``: what a page reparsed at a shorter depth
changes in its record, which feeds never see.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.policy.fates import Fate


@dataclass(slots=True)
class PageRecord:
    url: str
    status: int
    depth: int
    title: str | None
    content_type: str | None
    length: int
    links: int
    fetched_at: str
    host: str = ""
    last_modified: str | None = None
    etag: str | None = None  # the ETag header, as sent (revisits send it back)
    content_hash: str | None = None  # SHA-256 of the body, hex
    # SimHash of the page's visible text (16 hex digits: crawler.policy.simhash), for
    # an HTML page answered 200: a revisit that moves it by at most
    # REVISIT_CHANGE_THRESHOLD bits is no change.
    text_hash: str | None = None
    # Whether its text is within NEARDUP_MAX_DISTANCE bits of another page of its
    # host (crawler.spiders.neardups); None: not looked for.
    near_duplicate: bool | None = None
    tier: int = 0  # the timeout tier it was fetched on
    node: str = ""  # the crawler node that fetched it
    error: str | None = None  # why it failed for good (status 0), else None
    store_path: str | None = None  # relative to PAGESTORE_URL, set by the page store
    body: bytes = field(default=b"", repr=False)
    # What became of the URL (crawler.policy.fates): every URL gets one record.
    fate: Fate = "fetched"
    location: str | None = None  # where a redirect led (fate "redirected")
    # Its importance I(P) when the frontier handed it out, and the in-links counted
    # for it by then (FRONTIER_ORDER = importance); None in any other order.
    importance: float | None = None
    inlinks: int | None = None
    # The content signals it was served with, by source (robots.txt's Content-Signal
    # and Content-Usage, its own headers'), each key -> value as the site gave it
    # (crawler.policy.contentsignals); None when it was served with none.
    content_signals: dict[str, dict[str, str]] | None = None


@dataclass(slots=True, frozen=True)
class DepthRepair:
    """A page reparsed from the page store at a shorter depth (depth repair): its
    record's depth becomes *depth*. The page was recorded when it was fetched, so
    this is no second record: the page records middleware hands it to the records
    pipeline, never to feeds (one feed line per URL)."""

    url: str
    depth: int


# The fields feeds get, in this order: all but the body.
EXPORTED = tuple(f.name for f in fields(PageRecord) if f.name != "body")
