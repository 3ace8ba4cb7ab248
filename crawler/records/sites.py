"""Each host's crawl history, carried over crawls: table ``sites`` of the page-record
database (beside ``pages``), SQLite or PostgreSQL.

A row holds the host's observation by one crawl (``crawl``: the crawl's key prefix
and start time), its moving averages over the crawls before that one
(``crawler.policy.siteclass.SiteHistory``), and the strategy it was last crawled with,
as shown. Saving a later crawl's observation first folds the row's own into the
averages: a crawl's observation is folded once, when the next crawl saves, however
many nodes and saves each crawl has. Every call blocks: callers run them in a
thread. Driver errors come out as ``RecordsDatabaseError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from crawler.context.database import DRIVER_ERRORS
from crawler.policy.siteclass import Observation, SiteHistory
from crawler.records.schema import clean_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.records.database import RecordsDatabase, RecordsDatabaseError

_REAL = "DOUBLE PRECISION"
# The columns of ``sites``, in order, with their SQL type.
SCHEMA: tuple[tuple[str, str], ...] = (
    ("host", "TEXT PRIMARY KEY"),
    ("crawl", "TEXT NOT NULL"),  # the crawl whose observation the next four are
    ("pages", "BIGINT NOT NULL"),  # pages it parsed
    ("links", "BIGINT NOT NULL"),  # links on them
    ("leaving", "BIGINT NOT NULL"),  # of which to another site
    ("depth", "INTEGER NOT NULL"),  # link levels its pages spanned
    ("crawls", "INTEGER NOT NULL"),  # earlier crawls in the averages below
    ("evidence", "BIGINT NOT NULL"),  # their pages
    ("share", _REAL),  # moving average of the share of links leaving; NULL: none
    ("span", _REAL),  # moving average of the link levels spanned
    ("strategy", "TEXT"),  # as `scrapy frontier hosts` showed it last
    ("updated_at", "TEXT NOT NULL"),  # UTC, ISO 8601
)
COLUMNS = tuple(name for name, _type in SCHEMA)
# Rows read in one statement (SQLite allows 32,766 parameters; kept well under).
CHUNK = 500


@dataclass(frozen=True, slots=True)
class SiteRow:
    """A host's row: *observation* by *crawl*, and the averages of the crawls before."""

    host: str
    crawl: str
    observation: Observation
    history: SiteHistory
    strategy: str | None = None

    def history_before(self, crawl: str) -> SiteHistory:
        """The host's history as the crawl *crawl* starts from: the averages, with
        this row's observation folded in if it is an earlier crawl's."""
        if crawl == self.crawl:
            return self.history
        return self.history.folded(self.observation)

    def saved(self, crawl: str, observation: Observation, strategy: str) -> SiteRow:
        """The row once *crawl* saves *observation*: an earlier crawl's observation
        is folded into the averages first; the same crawl's, the larger one kept
        (a node with older totals may save after one with newer)."""
        if crawl != self.crawl:
            history = self.history_before(crawl)
        else:
            history = self.history
            if observation.pages < self.observation.pages:
                observation = self.observation
        return SiteRow(self.host, crawl, observation, history, strategy)


@dataclass(frozen=True, slots=True)
class SiteSave:
    """What a crawl saves of one host."""

    host: str
    observation: Observation
    strategy: str


class SiteTable:
    """Table ``sites`` of one page-record database."""

    def __init__(self, database: RecordsDatabase) -> None:
        self._database = database
        self._mark = "?" if database.url.dialect == "sqlite" else "%s"
        self._postgres = database.url.dialect == "postgresql"
        assignments = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
        self._upsert_sql = (
            f"INSERT INTO sites ({', '.join(COLUMNS)}) "  # noqa: S608 (names only)
            f"VALUES ({', '.join([self._mark] * len(COLUMNS))}) "
            f"ON CONFLICT (host) DO UPDATE SET {assignments}"
        )

    def create(self) -> None:
        """Make the table if missing."""
        columns = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
        try:
            with self._database.transaction() as cursor:
                self._database.lock_schema(cursor)
                cursor.execute(f"CREATE TABLE IF NOT EXISTS sites ({columns})")
        except DRIVER_ERRORS as exc:
            raise self._error("cannot create the sites table in", exc) from None

    def read(self) -> dict[str, SiteRow]:
        """Every host's row, by host."""
        try:
            with self._database.transaction() as cursor:
                cursor.execute(f"SELECT {', '.join(COLUMNS)} FROM sites")  # noqa: S608
                return {row.host: row for row in map(_row_of, cursor.fetchall())}
        except DRIVER_ERRORS as exc:
            raise self._error("cannot read the sites table of", exc) from None

    def save(self, crawl: str, saves: Sequence[SiteSave]) -> None:
        """Write what *crawl* saw of each host in *saves*, in one transaction."""
        if not saves:
            return
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        try:
            with self._database.transaction() as cursor:
                hosts = [clean_text(save.host) for save in saves]
                old = self._rows(cursor, hosts)
                rows = []
                for host, save in zip(hosts, saves, strict=True):
                    before = old.get(host) or SiteRow(
                        host, crawl, save.observation, SiteHistory()
                    )
                    row = before.saved(crawl, save.observation, save.strategy)
                    rows.append(_values(row, now))
                cursor.executemany(self._upsert_sql, rows)
        except DRIVER_ERRORS as exc:
            raise self._error("cannot save site histories in", exc) from None

    def _rows(self, cursor: Any, hosts: list[str]) -> dict[str, SiteRow]:
        """The rows of *hosts* there are, locked until the transaction ends on
        PostgreSQL (another node saving the same host waits)."""
        found: dict[str, SiteRow] = {}
        lock = " FOR UPDATE" if self._postgres else ""
        for start in range(0, len(hosts), CHUNK):
            chunk = hosts[start : start + CHUNK]
            marks = ", ".join([self._mark] * len(chunk))
            cursor.execute(
                f"SELECT {', '.join(COLUMNS)} FROM sites "  # noqa: S608
                f"WHERE host IN ({marks}){lock}",
                chunk,
            )
            for values in cursor.fetchall():
                row = _row_of(values)
                found[row.host] = row
        return found

    def _error(self, doing: str, exc: Exception) -> RecordsDatabaseError:
        return self._database.error(doing, exc)


def _row_of(values: Sequence[Any]) -> SiteRow:
    """A row as selected (COLUMNS order) as a ``SiteRow``."""
    (host, crawl, pages, links, leaving, depth, crawls, evidence, share, span,
     strategy, _updated) = values  # fmt: skip
    observation = Observation(int(pages), int(links), int(leaving), int(depth))
    history = SiteHistory(
        crawls=int(crawls),
        pages=int(evidence),
        share=None if share is None else float(share),
        depth=None if span is None else float(span),
    )
    return SiteRow(str(host), str(crawl), observation, history, strategy)


def _values(row: SiteRow, now: str) -> tuple[Any, ...]:
    """*row*'s values in COLUMNS order, text made fit for every database."""
    observation, history = row.observation, row.history
    return (
        row.host,
        clean_text(row.crawl),
        observation.pages,
        observation.links,
        observation.leaving,
        observation.depth,
        history.crawls,
        history.pages,
        history.share,
        history.depth,
        None if row.strategy is None else clean_text(row.strategy),
        now,
    )
