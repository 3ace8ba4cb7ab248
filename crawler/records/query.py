"""What ``scrapy pages`` asks of the page-record database: filters, turned into SQL.

Pure: no connection, only the statement and its parameters, for either dialect.
Values always go as parameters; the statement holds only column names and marks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.fates import FAILED_FATES
from crawler.records.schema import COLUMNS

if TYPE_CHECKING:
    from collections.abc import Collection

# What rows may be sorted by (``scrapy pages --order``), and the ORDER BY of each:
# the most important and most linked first, rows without a value (a crawl not in
# importance order) last; the URL breaks ties, so every order is stable.
ORDERS: dict[str, str] = {
    "url": "url",
    "importance": "importance DESC NULLS LAST, url",
    "inlinks": "inlinks DESC NULLS LAST, url",
    "depth": "depth, url",
    "fetched": "fetched_at, url",
}


@dataclass(frozen=True, slots=True)
class PagesQuery:
    """The rows matching every filter given, by URL: *host* exactly, *status*
    exactly, *title* as a case-insensitive substring, *fate* one of *fates* (a row
    of an earlier version, without a fate, counts as failed when its status is 0),
    written by the crawl *crawl* (its key prefix), and with *unknown_crawl* also
    the rows of no known crawl (written before rows said so), served with every
    content signal of *signals* (``(key, value)``, from any source; a value of None:
    any value); at most *limit*."""

    host: str | None = None
    crawl: str | None = None
    unknown_crawl: bool = False
    status: int | None = None
    title: str | None = None
    fates: Collection[str] | None = None
    signals: tuple[tuple[str, str | None], ...] = ()
    limit: int | None = None
    order: str = "url"

    def sql(self, dialect: str, present: Collection[str]) -> tuple[str, list[object]]:
        """The SELECT for *dialect* (``sqlite`` or ``postgresql``) over a table with
        the columns *present* (those missing read as NULL), and its parameters."""
        mark = "?" if dialect == "sqlite" else "%s"
        where: list[str] = []
        values: list[object] = []
        if self.host is not None:
            where.append(f"host = {mark}")
            values.append(self.host.lower())
        if self.crawl is not None:
            crawl = (self.crawl, self.unknown_crawl)
            where.append(_crawl_filter(*crawl, present, values, mark))
        if self.status is not None:
            where.append(f"status = {mark}")
            values.append(self.status)
        if self.title is not None:
            like = "LIKE" if dialect == "sqlite" else "ILIKE"
            where.append(f"title {like} {mark} ESCAPE '!'")
            escaped = self.title.replace("!", "!!").replace("%", "!%")
            values.append(f"%{escaped.replace('_', '!_')}%")
        if self.fates is not None:
            fates = sorted(self.fates)
            where.append(_fate_filter(fates, "fate" in present, values, mark))
        for key, value in self.signals:
            if "content_signals" not in present:
                where.append("1 = 0")  # a table of an earlier version: none recorded
                continue
            where.append(_signal_filter(dialect, value is not None, mark))
            values += [key] if value is None else [key, value]
        selected = (c if c in present else f"NULL AS {c}" for c in COLUMNS)
        sql = f"SELECT {', '.join(selected)} FROM pages"  # noqa: S608 (no input in it)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {ORDERS[self.order]}"
        if self.limit is not None:
            sql += f" LIMIT {int(self.limit)}"
        return sql, values


def _crawl_filter(
    crawl: str, unknown: bool, present: Collection[str], values: list[object], mark: str
) -> str:
    """The condition "written by *crawl*" (or, with *unknown*, by no known crawl),
    appending its values; a table without the column holds only unknown ones."""
    if "crawl" not in present:
        return "1 = 1" if unknown else "1 = 0"
    values.append(crawl)
    return f"(crawl = {mark} OR crawl IS NULL)" if unknown else f"crawl = {mark}"


def _signal_filter(dialect: str, with_value: bool, mark: str) -> str:
    """The condition "served with the signal KEY (= VALUE)", whatever its source:
    the JSON of ``content_signals`` (source -> key -> value) opened with each
    dialect's own functions; its values (the key, the value) go as parameters."""
    if dialect == "sqlite":
        sources = "json_each(pages.content_signals) AS statement"
        entries = "json_each(statement.value) AS entry"
    else:
        sources = "jsonb_each(pages.content_signals::jsonb) AS statement(source, body)"
        entries = "jsonb_each_text(statement.body) AS entry(key, value)"
    value = f" AND entry.value = {mark}" if with_value else ""
    condition = f"entry.key = {mark}{value}"
    return f"EXISTS (SELECT 1 FROM {sources}, {entries} WHERE {condition})"  # noqa: S608 (no input in it)


def _fate_filter(
    fates: list[str], has_fate: bool, values: list[object], mark: str
) -> str:
    """The condition "fate is one of *fates*" (appending its values). A row of an
    earlier version has no fate: it matches ``fetched`` if its status is not 0, and
    a filter asking for every failed fate if it is."""
    clauses = []
    if has_fate and fates:
        clauses.append(f"fate IN ({', '.join([mark] * len(fates))})")
        values.extend(fates)
    legacy = "fate IS NULL AND " if has_fate else ""
    if set(fates) >= FAILED_FATES:
        clauses.append(f"({legacy}status = 0)")
    if "fetched" in fates:
        clauses.append(f"({legacy}status <> 0)")
    return "(" + " OR ".join(clauses) + ")" if clauses else "1 = 0"
