"""The spill database's table: entries of queues past their head, waiting on disk.

One row per spilled queue entry, keyed by crawl, shard, host, queue class and the
entry's sequence number (unique in its shard), so writing a batch again after a
stop between the write and its trim in Redis changes nothing (``ON CONFLICT DO
NOTHING``), and a queue's next entries are one range of the key, oldest first.
SQLite or PostgreSQL (``crawler.context.database``); a cluster shares PostgreSQL.
Every call blocks: the spill worker runs them on its own thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.context.database import (
    DRIVER_ERRORS,
    DatabaseURL,
    RecordsDatabaseError,
    first_line,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

# Key of the PostgreSQL advisory lock under which nodes create the table one at a
# time (two CREATE ... IF NOT EXISTS at once may both find the name free).
SCHEMA_LOCK = 0x7370696C

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS frontier_spill (
        crawl TEXT NOT NULL,
        shard INTEGER NOT NULL,
        host TEXT NOT NULL,
        class INTEGER NOT NULL,
        seq BIGINT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (crawl, shard, host, class, seq)
    )""",
)

# A spilled entry as stored: its host, queue class, sequence number and entry.
Row = tuple[str, int, int, str]


# What a spill database call may raise besides a bug.
DATABASE_ERRORS: tuple[type[Exception], ...] = (*DRIVER_ERRORS, RecordsDatabaseError)


class SpillDatabaseError(RuntimeError):
    """The spill database cannot be used: one line for the operator."""


def prepare_table(url: str, crawl: str, *, reset: bool) -> None:
    """Reach the spill database as the node starts, making the table if missing,
    and with *reset* delete the crawl's rows: ``SpillDatabaseError`` (one line,
    password hidden) if it cannot, so start-up stops rather than the first spill."""
    table = SpillTable(url, crawl)
    try:
        table.open()
        if reset:
            table.clear()
    except DATABASE_ERRORS as exc:
        raise SpillDatabaseError(
            f"the spill database {shown(url)} (FRONTIER_SPILL_DATABASE_URL) cannot "
            f"be used: {first_line(exc)}"
        ) from None
    finally:
        table.close()


class SpillTable:
    """The crawl's spilled entries in the spill database; one thread at a time."""

    def __init__(self, url: str, crawl: str) -> None:
        self.url = DatabaseURL.parse(url, "FRONTIER_SPILL_DATABASE_URL")
        self.crawl = crawl
        mark = "?" if self.url.dialect == "sqlite" else "%s"
        marks = ", ".join([mark] * 6)
        self._insert = (
            "INSERT INTO frontier_spill (crawl, shard, host, class, seq, entry) "  # noqa: S608 (marks only)
            f"VALUES ({marks}) ON CONFLICT DO NOTHING"
        )
        where = (
            f"crawl = {mark} AND shard = {mark} AND host = {mark} AND class = {mark}"
        )
        self._next = (
            f"SELECT seq, entry FROM frontier_spill WHERE {where} "  # noqa: S608 (marks only)
            f"AND seq > {mark} ORDER BY seq LIMIT {mark}"
        )
        self._drop = f"DELETE FROM frontier_spill WHERE {where} AND seq <= {mark}"  # noqa: S608
        self._clear = f"DELETE FROM frontier_spill WHERE crawl = {mark}"  # noqa: S608
        self._count = f"SELECT COUNT(*) FROM frontier_spill WHERE crawl = {mark}"  # noqa: S608
        self._connection: Any = None

    def open(self) -> SpillTable:
        """Connect, making the table if it is missing."""
        self._connection = self.url.connect(create=True)
        cursor = self._connection.cursor()
        if self.url.dialect == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        for statement in SCHEMA:
            cursor.execute(statement)
        self._connection.commit()
        return self

    def close(self) -> None:
        """Close the connection; the next ``open`` makes another (even if a broken
        one's close fails)."""
        if self._connection is not None:
            connection, self._connection = self._connection, None
            connection.close()

    @property
    def is_open(self) -> bool:
        return self._connection is not None

    def add(self, shard: int, rows: Sequence[Row]) -> None:
        """Write *rows* of *shard*, committed when this returns; rows already there
        (written before a stop) are left as they are."""
        values = [(self.crawl, shard, *row) for row in rows]
        cursor = self._connection.cursor()
        cursor.executemany(self._insert, values)
        self._connection.commit()

    def next(
        self, shard: int, host: str, queue_class: int, after: int, limit: int
    ) -> list[tuple[int, str]]:
        """The next *limit* entries of one queue after sequence number *after*:
        (seq, entry), oldest first."""
        cursor = self._connection.cursor()
        cursor.execute(self._next, (self.crawl, shard, host, queue_class, after, limit))
        rows = [(int(seq), str(entry)) for seq, entry in cursor.fetchall()]
        self._connection.commit()  # a reader holds no snapshot between rounds
        return rows

    def drop(self, shard: int, host: str, queue_class: int, through: int) -> None:
        """Delete one queue's entries up to sequence number *through* (they are
        back in Redis)."""
        cursor = self._connection.cursor()
        cursor.execute(self._drop, (self.crawl, shard, host, queue_class, through))
        self._connection.commit()

    def count(self) -> int:
        """The crawl's spilled entries in the database."""
        cursor = self._connection.cursor()
        cursor.execute(self._count, (self.crawl,))
        (found,) = cursor.fetchone()
        self._connection.commit()
        return int(found)

    def clear(self) -> int:
        """Delete every entry of the crawl (a reset); how many."""
        cursor = self._connection.cursor()
        cursor.execute(self._clear, (self.crawl,))
        deleted = int(cursor.rowcount)
        self._connection.commit()
        return deleted
