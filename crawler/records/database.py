"""The page-record database: one row per URL in table ``pages``, SQLite or PostgreSQL.

``RECORDS_DATABASE_URL`` names it (``crawler.context.database``). The table and its
indexes are created when missing; a refetched URL overwrites its row (upsert on
``url``). Every call blocks: the pipeline runs them in a thread, the ``scrapy pages``
command directly. One object is used by one thread at a time. The table's columns
are ``crawler.records.schema``; what a query selects, ``crawler.records.query``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING, Any

from crawler.context.database import (
    DRIVER_ERRORS,
    DatabaseURL,
    RecordsDatabaseError,
    first_line,
    shown,
)
from crawler.records.query import PagesQuery
from crawler.records.schema import ADDED_COLUMNS, COLUMNS, INDEXED, SCHEMA, Row

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

# COLUMNS and RecordsDatabaseError are named here too for the ``scrapy pages``
# command, which imports them from this module.
__all__ = ["COLUMNS", "RecordsDatabase", "RecordsDatabaseError", "RowRejectedError"]


# Key of the PostgreSQL advisory lock under which nodes create tables and indexes one
# at a time: two CREATE ... IF NOT EXISTS at once may both find the name free and
# one then fails on PostgreSQL's catalog (a unique violation).
SCHEMA_LOCK = 0x63726177


class RowRejectedError(RecordsDatabaseError):
    """The database refused a row's values (not a connection problem)."""


class RecordsDatabase:
    """A connection to the page-record database, reopened after it broke."""

    def __init__(self, url: str) -> None:
        self.url = DatabaseURL.parse(url)
        self._raw_url = url
        self._connection: Any = None
        # The columns the table has (a read-only open of an older table may lack
        # ADDED_COLUMNS: they read as NULL).
        self._columns: set[str] = set(COLUMNS)
        mark = "?" if self.url.dialect == "sqlite" else "%s"
        assignments = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
        # Names and marks only: the values go as parameters.
        self._upsert_sql = (
            f"INSERT INTO pages ({', '.join(COLUMNS)}) "  # noqa: S608
            f"VALUES ({', '.join([mark] * len(COLUMNS))}) "
            f"ON CONFLICT (url) DO UPDATE SET {assignments} "
            # A record that arrives late (another node's, an earlier fetch's)
            # never replaces a newer one.
            "WHERE excluded.fetched_at >= pages.fetched_at"
        )
        # Depth repair: a row's depth only ever goes down.
        self._lower_depth_sql = (
            f"UPDATE pages SET depth = {mark} WHERE url = {mark} AND depth > {mark}"  # noqa: S608 (marks only)
        )

    # --- connecting ----------------------------------------------------------------

    def open(self, *, create: bool = True) -> RecordsDatabase:
        """Connect and, with *create*, make the table and indexes if missing;
        without, a missing SQLite file or table is an error (nothing is written)."""
        try:
            self._connection = self.url.connect(create=create)
            if create:
                self._create_schema()
            else:
                self._check_schema()
        except RecordsDatabaseError:
            self.close()
            raise
        except DRIVER_ERRORS as exc:
            self.close()
            raise self.error("cannot open", exc) from None
        return self

    def _create_schema(self) -> None:
        columns = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
        with self.transaction() as cursor:
            self.lock_schema(cursor)
            cursor.execute(f"CREATE TABLE IF NOT EXISTS pages ({columns})")
        self.add_missing_columns("pages", SCHEMA, ADDED_COLUMNS)
        with self.transaction() as cursor:
            self.lock_schema(cursor)
            for column in INDEXED:
                cursor.execute(
                    f"CREATE INDEX IF NOT EXISTS pages_{column} ON pages ({column})"
                )

    def add_missing_columns(
        self,
        table: str,
        schema: Sequence[tuple[str, str]],
        added: Sequence[str],
    ) -> None:
        """Bring *table*, written by an earlier version, up to *schema*: the
        *added* columns it lacks. Another process may add a column at the same
        time: only a column still missing after a failed ALTER is an error."""
        kinds = dict(schema)
        for column in added:
            if column in self._present_columns(table):
                continue
            exists = " IF NOT EXISTS" if self.url.dialect == "postgresql" else ""
            alter = f"ALTER TABLE {table} ADD COLUMN{exists} {column} {kinds[column]}"
            try:
                with self.transaction() as cursor:
                    self.lock_schema(cursor)
                    cursor.execute(alter)
            except DRIVER_ERRORS:
                if column not in self._present_columns(table):
                    raise

    def lock_schema(self, cursor: Any) -> None:
        """In a transaction that creates tables or indexes: on PostgreSQL, wait
        until no other node is doing so (the lock ends with the transaction)."""
        if self.url.dialect == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))

    def _present_columns(self, table: str = "pages") -> set[str]:
        """The columns *table* has (raises if there is no such table)."""
        with self.transaction() as cursor:
            cursor.execute(f"SELECT * FROM {table} LIMIT 0")  # noqa: S608 (our names)
            return {column[0].lower() for column in cursor.description}

    def _check_schema(self) -> None:
        try:
            self._columns = self._present_columns()
        except DRIVER_ERRORS as exc:
            raise RecordsDatabaseError(
                f"no pages table in {shown(self._raw_url)}: has a crawl written "
                f"records there? ({first_line(exc)})"
            ) from None

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor; committed at the end, rolled back on error. A connection
        that broke is closed, and the next call opens a new one."""
        if self._connection is None:
            self._connection = self.url.connect(create=True)
            self._create_schema()
        connection = self._connection
        cursor = connection.cursor()
        try:
            yield cursor
            connection.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                connection.rollback()
            if getattr(connection, "broken", False) or getattr(
                connection, "closed", False
            ):
                self.close()
            raise
        finally:
            with contextlib.suppress(Exception):
                cursor.close()

    # --- writing -------------------------------------------------------------------

    def upsert(self, rows: Sequence[Row]) -> list[Row]:
        """Write *rows* (COLUMNS order) in one transaction, each replacing the row
        of its URL unless that row was fetched later. If the database refuses a
        value, the rows are written one by one and those it refuses are returned; a
        connection problem raises ``RecordsDatabaseError`` and nothing is written."""
        if not rows:
            return []
        try:
            self._write(rows)
        except RowRejectedError:
            pass
        else:
            return []
        rejected = []
        for row in rows:
            try:
                self._write([row])
            except RowRejectedError:
                rejected.append(row)
        return rejected

    def lower_depths(self, depths: Sequence[tuple[str, int]]) -> None:
        """Lower the depth of each (url, depth)'s row to *depth*, in one
        transaction (a row already as shallow, or none, is left alone); a
        connection problem raises ``RecordsDatabaseError``."""
        if not depths:
            return
        values = [(depth, url, depth) for url, depth in depths]
        self._write(values, self._lower_depth_sql)

    def _write(self, rows: Sequence[Row], sql: str | None = None) -> None:
        try:
            with self.transaction() as cursor:
                cursor.executemany(sql or self._upsert_sql, rows)
        except DRIVER_ERRORS as exc:
            if self._is_data_error(exc):
                raise RowRejectedError(first_line(exc)) from None
            self.close()  # the next write reconnects and recreates the table
            raise self.error("cannot write to", exc) from None

    def _is_data_error(self, exc: Exception) -> bool:
        """Whether the database refused a value (else it could not be reached,
        was locked, lost its table: worth another try on a new connection)."""
        if isinstance(exc, sqlite3.Error):
            return not isinstance(exc, sqlite3.OperationalError)
        if isinstance(exc, UnicodeError | OverflowError | TypeError | ValueError):
            return True
        return any(
            cls.__module__.startswith("psycopg")
            and cls.__name__ in ("DataError", "IntegrityError")
            for cls in type(exc).__mro__
        )

    def error(self, doing: str, exc: Exception) -> RecordsDatabaseError:
        """The one-line error of *doing* something with the database (password
        hidden), for a driver error *exc*."""
        return RecordsDatabaseError(
            f"{doing} the records database {shown(self._raw_url)} "
            f"(RECORDS_DATABASE_URL): {first_line(exc)}"
        )

    # --- reading -------------------------------------------------------------------

    def query(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """The rows a ``PagesQuery`` of *filters* (its fields: host, crawl, status,
        title, fates, limit...) selects, as dicts by column."""
        query = PagesQuery(**filters)
        sql, values = query.sql(self.url.dialect, self._columns)
        try:
            with self.transaction() as cursor:
                cursor.execute(sql, values)
                for row in cursor:
                    yield dict(zip(COLUMNS, row, strict=True))
        except RecordsDatabaseError:
            raise
        except DRIVER_ERRORS as exc:
            raise self.error("cannot read", exc) from None
