"""The ``pages`` table of the page-record database: its columns, and a record's row.

One schema for SQLite and PostgreSQL; ``crawler.records.database`` creates it (and brings
a table of an earlier version up to it), ``crawler.records.query`` selects from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.policy.contentsignals import signals_json

if TYPE_CHECKING:
    from crawler.items import PageRecord

# The columns of ``pages``, in order, with their SQL type (the same in both dialects).
SCHEMA: tuple[tuple[str, str], ...] = (
    ("url", "TEXT PRIMARY KEY"),
    ("host", "TEXT NOT NULL"),
    ("depth", "INTEGER NOT NULL"),
    ("status", "INTEGER NOT NULL"),  # 0: the request failed for good, see error
    ("content_type", "TEXT"),
    ("length", "BIGINT NOT NULL"),  # bytes of the body
    ("title", "TEXT"),
    ("last_modified", "TEXT"),  # the Last-Modified header, as sent
    ("fetched_at", "TEXT NOT NULL"),  # UTC, ISO 8601: sorts as text
    ("content_hash", "TEXT"),  # SHA-256 of the body, hex
    ("store_path", "TEXT"),  # relative to PAGESTORE_URL
    ("tier", "INTEGER NOT NULL"),
    ("node", "TEXT NOT NULL"),
    ("error", "TEXT"),
    ("links", "INTEGER NOT NULL"),  # links followed from the page
    # Added later: a table of an earlier version gets them (ALTER TABLE) at open.
    ("fate", "TEXT"),  # what became of the URL (crawler.policy.fates); NULL: older
    ("location", "TEXT"),  # where a redirect led
    # The crawl (its key prefix) that wrote the row last; NULL: written before
    # rows said so. A URL keeps one row: a later crawl's fetch takes it over.
    ("crawl", "TEXT"),
    # Its importance I(P) and in-links when the frontier handed it out (SQLite's
    # REAL, a double); NULL: not crawled in importance order (FRONTIER_ORDER).
    ("importance", "DOUBLE PRECISION"),
    ("inlinks", "INTEGER"),
    # The content signals the page was served with, as compact JSON: source ->
    # key -> value (crawler.policy.contentsignals); NULL: none.
    ("content_signals", "TEXT"),
    # The SimHash of its visible text (16 hex digits), for an HTML page answered 200.
    ("text_hash", "TEXT"),
    # 1 if its text is nearly another page's of its host; NULL: not looked for.
    ("near_duplicate", "INTEGER"),
)
# Columns a table written by an earlier version may lack (added when missing).
ADDED_COLUMNS = (
    "fate",
    "location",
    "crawl",
    "importance",
    "inlinks",
    "content_signals",
    "text_hash",
    "near_duplicate",
)
# Columns with an index of their own.
INDEXED = ("host", "status", "fate", "crawl")
COLUMNS = tuple(name for name, _type in SCHEMA)
_TEXT = frozenset(name for name, kind in SCHEMA if kind.startswith("TEXT"))
_BIGINT = 2**63 - 1

Row = tuple[Any, ...]


def row_of(record: PageRecord, crawl: str = "") -> Row:
    """The ``pages`` row of *record* written by the crawl *crawl* (its key prefix;
    empty: NULL, not known), in COLUMNS order, with values every database takes: no
    NUL or lone surrogate in text, integers within BIGINT."""
    row = []
    for name in COLUMNS:
        value = (crawl or None) if name == "crawl" else getattr(record, name)
        if name == "content_signals":
            value = signals_json(record.content_signals)
        if name in _TEXT and value is not None:
            value = clean_text(str(value))
        elif isinstance(value, bool):  # near_duplicate: an INTEGER column everywhere
            value = int(value)
        elif isinstance(value, int):
            value = max(-_BIGINT, min(_BIGINT, value))
        row.append(value)
    return tuple(row)


def clean_text(text: str) -> str:
    """*text* as every database takes it: no NUL, no lone surrogate."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
