"""The URL library: every fetched URL's revisit state, in table ``revisits`` of the
page-record database (beside ``pages``), SQLite or PostgreSQL.

Redis holds only what is due: a feeder claims due URLs here (``claim``) and queues
them in the frontier; a URL that is not due costs Redis nothing beyond the seen
filter. A claim is a time (``claimed_until``), so at most one node takes a URL and a
claim whose revisit was lost expires; on PostgreSQL the claiming statement skips rows
another node is claiming (``FOR UPDATE SKIP LOCKED``), on SQLite it is one write
statement, which the database runs alone. Recording a visit ends its claim and sets
the next one (``crawler.records.visits``). Every call blocks: callers run them in a
thread. Driver errors come out as ``RecordsDatabaseError``, as the pages table's do.
"""

from __future__ import annotations

import time
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Any

from crawler.context.database import DRIVER_ERRORS
from crawler.policy.changehistory import History
from crawler.policy.freshness import multiplier_for
from crawler.policy.laziness import site_factors
from crawler.policy.revisitpace import BEHIND_SHARE, Pace
from crawler.records.visits import ACTIVE, COLUMNS, Entry, after_visit

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.policy.revisitconfig import RevisitConfig
    from crawler.records.database import RecordsDatabase, RecordsDatabaseError
    from crawler.records.visits import Outcome, Visit

_REAL = "DOUBLE PRECISION"
# The columns of ``revisits`` (the fields of ``Entry``, in order) with their SQL type.
SCHEMA: tuple[tuple[str, str], ...] = (
    ("url", "TEXT PRIMARY KEY"),
    ("host", "TEXT NOT NULL"),
    ("depth", "INTEGER NOT NULL"),
    ("state", "TEXT NOT NULL"),  # active | gone | once
    ("next_visit", _REAL),  # epoch seconds; NULL: not revisited
    ("revisit_interval", f"{_REAL} NOT NULL"),
    ("first_visit", f"{_REAL} NOT NULL"),
    ("last_visit", f"{_REAL} NOT NULL"),
    ("last_checked", f"{_REAL} NOT NULL"),
    ("last_change", _REAL),
    ("visits", "INTEGER NOT NULL"),
    ("checks", f"{_REAL} NOT NULL"),
    ("changes", f"{_REAL} NOT NULL"),
    ("observed", f"{_REAL} NOT NULL"),
    ("failures", "INTEGER NOT NULL"),
    ("content_hash", "TEXT"),
    ("etag", "TEXT"),
    ("last_modified", "TEXT"),
    ("last_outcome", "TEXT NOT NULL"),
    ("claimed_until", f"{_REAL} NOT NULL DEFAULT 0"),
    # Added later: a table of an earlier version gets it (ALTER TABLE) at open.
    ("text_hash", "TEXT"),  # SimHash of the last version that counted as a change
)
ADDED_COLUMNS = ("text_hash",)
assert tuple(name for name, _ in SCHEMA) == COLUMNS
INDEXES = (
    "CREATE INDEX IF NOT EXISTS revisits_due ON revisits (state, next_visit)",
    "CREATE INDEX IF NOT EXISTS revisits_claimed ON revisits (claimed_until)",
)
# Rows read in one statement (SQLite allows 32,766 parameters; kept well under).
CHUNK = 500
# Seconds between two estimates of adaptive's multiplier (the budget's share-out moves
# slowly), at least this many times as long as the last estimate took; and the most
# entries one estimate reads: a random sample of a bigger library gives about the
# same multiplier (5,000 take about 0.3 s of CPU).
MULTIPLIER_REFRESH = 15.0
MULTIPLIER_COST_FACTOR = 20.0
MULTIPLIER_SAMPLE = 5000


@dataclass(frozen=True, slots=True)
class Due:
    """A URL claimed for its revisit, with what its request needs."""

    url: str
    depth: int
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    next_visit: float
    revisit_interval: float


class URLLibrary:
    """Table ``revisits`` of one page-record database."""

    def __init__(self, database: RecordsDatabase, config: RevisitConfig) -> None:
        self._database = database
        self._config = config
        self._mark = "?" if database.url.dialect == "sqlite" else "%s"
        self._postgres = database.url.dialect == "postgresql"
        self._multiplier: float | None = None
        self._multiplier_at = float("-inf")  # when to estimate it again
        # Host -> its factor on its pages' intervals, for the hosts whose factor is
        # not 1 (adaptive: crawler.policy.laziness), and when to look again.
        self._site_factors: dict[str, float] = {}
        self._sites_at = float("-inf")
        self._pace = Pace()
        assignments = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
        self._upsert_sql = (
            f"INSERT INTO revisits ({', '.join(COLUMNS)}) "  # noqa: S608 (names only)
            f"VALUES ({', '.join([self._mark] * len(COLUMNS))}) "
            f"ON CONFLICT (url) DO UPDATE SET {assignments}"
        )

    def create(self) -> None:
        """Make the table and its indexes if missing."""
        columns = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
        self._run_all([f"CREATE TABLE IF NOT EXISTS revisits ({columns})"])
        self._database.add_missing_columns("revisits", SCHEMA, ADDED_COLUMNS)
        self._run_all(INDEXES)

    # --- visits --------------------------------------------------------------------

    def record(self, visits: Sequence[Visit], now: float) -> list[Outcome]:
        """Record *visits* (at most one per URL) in one transaction: each URL's next
        visit, history and validators; their claims end. Returns what each was."""
        if not visits:
            return []
        multiplier = self._current_multiplier(now)
        self._look_at_sites(now)
        outcomes: list[Outcome] = []
        try:
            with self._database.transaction() as cursor:
                old = self._entries(cursor, [visit.url for visit in visits])
                rows = []
                for visit in visits:
                    entry, outcome = after_visit(
                        old.get(visit.url),
                        visit,
                        now,
                        self._config,
                        multiplier,
                        site_factor=self._site_factors.get(visit.host, 1.0),
                    )
                    rows.append(astuple(entry))
                    outcomes.append(outcome)
                cursor.executemany(self._upsert_sql, rows)
        except DRIVER_ERRORS as exc:
            raise self._error("cannot record revisits in", exc) from None
        return outcomes

    def _entries(self, cursor: Any, urls: list[str]) -> dict[str, Entry]:
        """The entries of *urls* there are, locked until the transaction ends on
        PostgreSQL (another node recording the same URL waits)."""
        found: dict[str, Entry] = {}
        lock = " FOR UPDATE" if self._postgres else ""
        for start in range(0, len(urls), CHUNK):
            chunk = urls[start : start + CHUNK]
            marks = ", ".join([self._mark] * len(chunk))
            cursor.execute(
                f"SELECT {', '.join(COLUMNS)} FROM revisits "  # noqa: S608
                f"WHERE url IN ({marks}){lock}",
                chunk,
            )
            for row in cursor.fetchall():
                entry = Entry(*row)
                found[entry.url] = entry
        return found

    # --- adaptive's multiplier -----------------------------------------------------

    def _current_multiplier(self, now: float) -> float | None:
        """Adaptive's Lagrange multiplier over the library, re-estimated every
        MULTIPLIER_REFRESH seconds (the budget moves slowly); while no page has a
        rate yet (a crawl's first revisits), every shortest interval when that is
        shorter, so that a crawl on a scale of seconds does not keep its first
        intervals for 15 s."""
        if self._config.policy != "adaptive":
            return None
        if now < self._multiplier_at:
            return self._multiplier
        started = time.monotonic()
        pages = [
            (History(checks, changes, observed), self._config.bounds_for(host))
            for host, checks, changes, observed in self._select(
                "SELECT host, checks, changes, observed FROM revisits "
                "WHERE state = ? ORDER BY RANDOM() LIMIT ?",
                [ACTIVE, MULTIPLIER_SAMPLE],
            )
        ]
        self._pace = self._looked_at_pace(now)
        self._multiplier = multiplier_for(pages, self._pace.scale)
        cost = time.monotonic() - started
        refresh = MULTIPLIER_REFRESH
        if self._multiplier is None:
            refresh = min(refresh, self._config.bounds.min_interval)
        self._multiplier_at = now + max(refresh, MULTIPLIER_COST_FACTOR * cost)
        return self._multiplier

    @property
    def site_factors(self) -> dict[str, float]:
        """Host -> its factor on its pages' intervals, for the hosts whose factor
        is not 1, as of the last look (empty but under ``adaptive``)."""
        return dict(self._site_factors)

    def _look_at_sites(self, now: float) -> None:
        """Each host's factor from its active pages' pooled change histories (the
        checks and changes of each page's window), in one statement, at most every
        MULTIPLIER_REFRESH seconds, or every shortest interval when that is
        shorter (a crawl on a scale of seconds: intervals move no faster), and at
        least MULTIPLIER_COST_FACTOR times as long as the look took. Apart from
        the multiplier: counted in the budget's share-out, a lazy site's longer
        intervals would free fetches that every page's shorter ones would take
        back, and nothing would drift."""
        if self._config.policy != "adaptive" or now < self._sites_at:
            return
        started = time.monotonic()
        rows = self._select(
            "SELECT host, SUM(changes), SUM(checks) FROM revisits "
            "WHERE state = ? GROUP BY host",
            [ACTIVE],
        )
        totals = (
            (host, float(changes), float(checks)) for host, changes, checks in rows
        )
        self._site_factors = site_factors(totals, self._config.laziness)
        refresh = min(MULTIPLIER_REFRESH, self._config.bounds.min_interval)
        cost = time.monotonic() - started
        self._sites_at = now + max(refresh, MULTIPLIER_COST_FACTOR * cost)

    def _looked_at_pace(self, now: float) -> Pace:
        """The pace after a look at the crawl's visits and what is overdue."""
        visits, backlog, size = self._select(
            "SELECT COALESCE(SUM(visits), 0), "
            "COALESCE(SUM(CASE WHEN state = ? AND next_visit <= ? THEN 1 END), 0), "
            "COALESCE(SUM(CASE WHEN state = ? THEN 1 END), 0) FROM revisits",
            [ACTIVE, now, ACTIVE],
        )[0]
        interval = self._config.bounds.interval
        return self._pace.update(
            now=now,
            visits=float(visits),
            backlog=float(backlog),
            budget=int(size) / interval,
            lag=BEHIND_SHARE * interval,
        )

    # --- the feeder's side ---------------------------------------------------------

    def claim(self, now: float, limit: int) -> list[Due]:
        """Claim up to *limit* URLs due at *now*, earliest due first, for
        REVISIT_CLAIM_TIMEOUT seconds; no other node gets them meanwhile."""
        if limit <= 0:
            return []
        skip_locked = " FOR UPDATE SKIP LOCKED" if self._postgres else ""
        sql = (
            "UPDATE revisits SET claimed_until = ? WHERE url IN ("  # noqa: S608
            "SELECT url FROM revisits WHERE state = ? AND next_visit <= ? "
            f"AND claimed_until <= ? ORDER BY next_visit LIMIT ?{skip_locked}) "
            "RETURNING url, depth, etag, last_modified, content_hash, next_visit, "
            "revisit_interval"
        )
        until = now + self._config.claim_timeout
        rows = self._select(sql, [until, ACTIVE, now, now, limit])
        return sorted((Due(*row) for row in rows), key=lambda due: due.next_visit)

    def outstanding(self, now: float) -> int:
        """URLs claimed and not yet recorded, crawl-wide."""
        rows = self._select(
            "SELECT COUNT(*) FROM revisits WHERE claimed_until > ?", [now]
        )
        return int(rows[0][0])

    def has_scheduled(self) -> bool:
        """Whether any URL has a next visit: then the crawl has work ahead."""
        rows = self._select("SELECT 1 FROM revisits WHERE state = ? LIMIT 1", [ACTIVE])
        return bool(rows)

    # --- plumbing ------------------------------------------------------------------

    def _select(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows *sql* (with ``?`` marks for *values*) returns, committed."""
        if self._postgres:
            sql = sql.replace("?", "%s")  # no literal "?" in these statements
        try:
            with self._database.transaction() as cursor:
                cursor.execute(sql, values)
                return [tuple(row) for row in cursor.fetchall()]
        except DRIVER_ERRORS as exc:
            raise self._error("cannot read the URL library in", exc) from None

    def _run_all(self, statements: Sequence[str]) -> None:
        try:
            with self._database.transaction() as cursor:
                self._database.lock_schema(cursor)
                for statement in statements:
                    cursor.execute(statement)
        except DRIVER_ERRORS as exc:
            raise self._error("cannot create the URL library in", exc) from None

    def _error(self, doing: str, exc: Exception) -> RecordsDatabaseError:
        return self._database.error(doing, exc)
