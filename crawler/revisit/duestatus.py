"""What the URL library says is due: the figures of ``scrapy frontier status``'s
Revisits section, read from table ``revisits`` of the page-record database.

The database is opened read-only, as ``scrapy pages`` opens it, and read in three
queries whatever the library's size: one scan for the counts, one ``GROUP BY`` for
the states, and one ordered read of one or two rows for the median lateness (the
library's index on ``next_visit`` serves it). A library without table ``revisits``
(a crawl with revisits off, or one of an earlier version) has no figures: None,
never an error. "Due" is an active URL whose ``next_visit`` has come.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.context.database import DRIVER_ERRORS, DatabaseURL, first_line, shown
from crawler.records.database import RecordsDatabase, RecordsDatabaseError

if TYPE_CHECKING:
    from collections.abc import Sequence

# Seconds a due URL may wait before it counts as overdue: every revisit waits a
# little after it falls due (a feeder round, REVISIT_FEED_INTERVAL, then its host's
# politeness delay and its place in the queue), and that is not worth a warning.
OVERDUE_GRACE = 60.0
# The window of "revisits in the last hour", seconds.
RECENT_WINDOW = 3600.0
# The states of a URL in the library, in the order they are shown: revisited, gone
# (failed REVISIT_GONE_AFTER times running), fetched once (its first visit failed).
STATES = ("active", "gone", "once")

# Counts over the whole table in one scan; the marks are, in order: now, the
# overdue bound, now, now, the start of the recent window.
_TOTALS = """
SELECT
  COALESCE(SUM(CASE WHEN state = 'active' AND next_visit <= {m} THEN 1 ELSE 0 END), 0),
  COALESCE(SUM(CASE WHEN state = 'active' AND next_visit < {m} THEN 1 ELSE 0 END), 0),
  MIN(CASE WHEN state = 'active' THEN next_visit END),
  MIN(CASE WHEN state = 'active' AND next_visit > {m} THEN next_visit END),
  COALESCE(SUM(CASE WHEN claimed_until > {m} THEN 1 ELSE 0 END), 0),
  COALESCE(SUM(CASE WHEN visits > 1 AND last_visit >= {m} THEN 1 ELSE 0 END), 0)
FROM revisits
"""
_STATES = "SELECT state, COUNT(*) FROM revisits GROUP BY state"
# The middle one or two next_visit of the due URLs: now, how many, how many skipped.
_MIDDLE = """
SELECT next_visit FROM revisits WHERE state = 'active' AND next_visit <= {m}
ORDER BY next_visit LIMIT {m} OFFSET {m}
"""
_HAS_TABLE = {
    "sqlite": "SELECT COUNT(*) FROM sqlite_master "
    "WHERE type = 'table' AND name = 'revisits'",
    # to_regclass follows the search_path, as the crawl's own statements do.
    "postgresql": "SELECT COUNT(to_regclass('revisits'))",
}
_MARKS = {"sqlite": "?", "postgresql": "%s"}


@dataclass(frozen=True, slots=True)
class DueStatus:
    """The URL library at *now* (epoch seconds). Lateness is how long a due URL
    has been due (now - next_visit), in seconds; None when nothing is due."""

    now: float
    by_state: dict[str, int] = field(default_factory=dict)
    due: int = 0
    overdue: int = 0  # due for more than OVERDUE_GRACE
    median_lateness: float | None = None
    max_lateness: float | None = None
    claimed: int = 0  # taken by a feeder whose claim has not run out
    recent_revisits: int = 0  # URLs revisited within RECENT_WINDOW of now
    next_due: float | None = None  # the earliest next_visit still to come

    @property
    def library(self) -> int:
        """URLs in the library, every state."""
        return sum(self.by_state.values())


def read_due_status(url: str, *, now: float) -> DueStatus | None:
    """The figures of the library in the database *url* (RECORDS_DATABASE_URL) at
    *now*; None when there is no library: no URL, no SQLite file, no table
    ``revisits``. Raises ``RecordsDatabaseError`` (one line) when the database
    cannot be opened or read."""
    if not url:
        return None
    parsed = DatabaseURL.parse(url)
    if parsed.dialect == "sqlite" and not Path(parsed.target).is_file():
        return None
    database = RecordsDatabase(url).open(create=False)
    try:
        return due_status(database, now=now)
    except RecordsDatabaseError:
        raise
    except DRIVER_ERRORS as exc:
        raise RecordsDatabaseError(
            f"cannot read the URL library (table revisits) of {shown(url)} "
            f"(RECORDS_DATABASE_URL): {first_line(exc)}"
        ) from None
    finally:
        database.close()


def due_status(database: RecordsDatabase, *, now: float) -> DueStatus | None:
    """The figures of *database*'s library at *now*; None without table
    ``revisits``. Raises the driver's errors."""
    dialect = database.url.dialect
    mark = _MARKS[dialect]
    with database.transaction() as cursor:
        cursor.execute(_HAS_TABLE[dialect])
        if not cursor.fetchone()[0]:
            return None
        cursor.execute(
            _TOTALS.format(m=mark),
            (now, now - OVERDUE_GRACE, now, now, now - RECENT_WINDOW),
        )
        due, overdue, earliest, next_due, claimed, recent = cursor.fetchone()
        cursor.execute(_STATES)
        by_state = _ordered_states(cursor.fetchall())
        middle = _middle_visits(cursor, mark, now=now, due=int(due))
    return DueStatus(
        now=now,
        by_state=by_state,
        due=int(due),
        overdue=int(overdue),
        median_lateness=now - sum(middle) / len(middle) if middle else None,
        max_lateness=now - float(earliest) if due and earliest is not None else None,
        claimed=int(claimed),
        recent_revisits=int(recent),
        next_due=float(next_due) if next_due is not None else None,
    )


def _middle_visits(cursor: Any, mark: str, *, now: float, due: int) -> list[float]:
    """The next_visit of the median due URL, or of the two middle ones when *due*
    is even (none when nothing is due, or when the due URLs were recorded between
    the two reads)."""
    if not due:
        return []
    cursor.execute(_MIDDLE.format(m=mark), (now, 2 - due % 2, (due - 1) // 2))
    return [float(visit) for (visit,) in cursor.fetchall()]


def _ordered_states(rows: Sequence[tuple[Any, Any]]) -> dict[str, int]:
    """URLs by state: STATES first (each, even at 0), then any other, by name."""
    counts = {str(state): int(count) for state, count in rows}
    others = sorted(state for state in counts if state not in STATES)
    return {state: counts.get(state, 0) for state in (*STATES, *others)}
