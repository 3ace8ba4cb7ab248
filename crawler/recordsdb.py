"""The page-record database: one row per URL in table ``pages``, SQLite or PostgreSQL.

``RECORDS_DATABASE_URL`` names it: ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db`` (SQLAlchemy's spelling), or
``postgresql://user:password@host:port/db`` (``postgres://`` too; any libpq option,
such as ``?options=-csearch_path%3Dcrawl``, passes through). The table and its
indexes are created when missing; a refetched URL overwrites its row (upsert on
``url``). Every call blocks: the pipeline runs them in a thread, the ``scrapy pages``
command directly. One object is used by one thread at a time.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.connection import masked
from crawler.policy.fates import FAILED_FATES

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence

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
    ("store_path", "TEXT"),  # relative to PAGESTORE_DIR
    ("tier", "INTEGER NOT NULL"),
    ("node", "TEXT NOT NULL"),
    ("error", "TEXT"),
    ("links", "INTEGER NOT NULL"),  # links followed from the page
    # Added later: a table of an earlier version gets them (ALTER TABLE) at open.
    ("fate", "TEXT"),  # what became of the URL (crawler.policy.fates); NULL: older
    ("location", "TEXT"),  # where a redirect led
)
# Columns a table written by an earlier version may lack (added when missing).
ADDED_COLUMNS = ("fate", "location")
# Columns with an index of their own.
INDEXED = ("host", "status", "fate")
COLUMNS = tuple(name for name, _type in SCHEMA)
_TEXT = frozenset(name for name, kind in SCHEMA if kind.startswith("TEXT"))
_BIGINT = 2**63 - 1
# Seconds to wait for a PostgreSQL server (unless the URL sets connect_timeout), and
# for a SQLite file another process is writing.
CONNECT_TIMEOUT = 10
SQLITE_BUSY_TIMEOUT = 10.0

Row = tuple[Any, ...]


def _driver_errors() -> tuple[type[Exception], ...]:
    """What a database call may raise besides a bug: the drivers' errors, and the
    ones a bad value or file raises while it is sent."""
    errors: tuple[type[Exception], ...] = (
        sqlite3.Error,
        OSError,
        UnicodeError,
        OverflowError,
        ValueError,
        TypeError,
    )
    try:
        import psycopg  # noqa: PLC0415 (optional: only PostgreSQL users need it)
    except ImportError:
        return errors
    return (*errors, psycopg.Error)


_ERRORS = _driver_errors()


class RecordsDatabaseError(RuntimeError):
    """What is wrong with the database, in one line fit for an operator."""


class RowRejectedError(RecordsDatabaseError):
    """The database refused a row's values (not a connection problem)."""


@dataclass(frozen=True, slots=True)
class DatabaseURL:
    """A parsed ``RECORDS_DATABASE_URL``: ``sqlite`` with a path, or ``postgresql``."""

    dialect: str
    target: str  # the SQLite path, or the libpq URL

    @classmethod
    def parse(cls, url: str) -> DatabaseURL:
        """Raises ``RecordsDatabaseError`` naming the setting for a URL of neither kind."""
        scheme = url.partition("://")[0].lower()
        if scheme == "sqlite" and url[len("sqlite://") :].startswith("/"):
            path = url[len("sqlite:///") :]
            if path:
                return cls("sqlite", path)
        elif scheme in ("postgresql", "postgres"):
            return cls("postgresql", url)
        raise RecordsDatabaseError(
            f"RECORDS_DATABASE_URL must be sqlite:///path or postgresql://..., "
            f"got {shown(url)!r}"
        )


def shown(url: str) -> str:
    """*url* with any password hidden, for messages."""
    try:
        return masked(url)
    except ValueError:  # a port that is not a number
        return url.rsplit("@", maxsplit=1)[-1]


def row_of(record: PageRecord) -> Row:
    """The ``pages`` row of *record*, in COLUMNS order, with values every database
    takes: no NUL or lone surrogate in text, integers within BIGINT."""
    row = []
    for name in COLUMNS:
        value = getattr(record, name)
        if name in _TEXT and value is not None:
            value = _clean_text(str(value))
        elif isinstance(value, int):
            value = max(-_BIGINT, min(_BIGINT, value))
        row.append(value)
    return tuple(row)


def _clean_text(text: str) -> str:
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


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

    # --- connecting ----------------------------------------------------------------

    def open(self, *, create: bool = True) -> RecordsDatabase:
        """Connect and, with *create*, make the table and indexes if missing;
        without, a missing SQLite file or table is an error (nothing is written)."""
        try:
            self._connection = self._connect(create=create)
            if create:
                self._create_schema()
            else:
                self._check_schema()
        except RecordsDatabaseError:
            self.close()
            raise
        except _ERRORS as exc:
            self.close()
            raise self._error("cannot open", exc) from None
        return self

    def _connect(self, *, create: bool) -> Any:
        if self.url.dialect == "sqlite":
            return self._connect_sqlite(create=create)
        try:
            import psycopg  # noqa: PLC0415 (only PostgreSQL users need the driver)
            from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
        except ImportError:
            raise RecordsDatabaseError(
                "RECORDS_DATABASE_URL is a PostgreSQL URL but psycopg is not "
                "installed: pip install 'psycopg[binary]'"
            ) from None
        options: dict[str, Any] = {}
        if "connect_timeout" not in conninfo_to_dict(self._raw_url):
            options["connect_timeout"] = CONNECT_TIMEOUT
        return psycopg.connect(self._raw_url, **options)

    def _connect_sqlite(self, *, create: bool) -> sqlite3.Connection:
        path = Path(self.url.target)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            target, uri = self.url.target, False
        else:
            if not path.is_file():
                raise RecordsDatabaseError(
                    f"no records database at {self.url.target!r} "
                    "(RECORDS_DATABASE_URL): has a crawl written one?"
                )
            target, uri = f"{path.resolve().as_uri()}?mode=ro", True
        connection = sqlite3.connect(
            target, timeout=SQLITE_BUSY_TIMEOUT, uri=uri, check_same_thread=False
        )
        if create:
            connection.execute("PRAGMA journal_mode=WAL")
        return connection

    def _create_schema(self) -> None:
        columns = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
        with self._transaction() as cursor:
            cursor.execute(f"CREATE TABLE IF NOT EXISTS pages ({columns})")
        self._add_missing_columns()
        with self._transaction() as cursor:
            for column in INDEXED:
                cursor.execute(
                    f"CREATE INDEX IF NOT EXISTS pages_{column} ON pages ({column})"
                )

    def _add_missing_columns(self) -> None:
        """Bring a table an earlier version wrote up to SCHEMA. Another process
        may add a column at the same time: only a column still missing after a
        failed ALTER is an error."""
        kinds = dict(SCHEMA)
        for column in ADDED_COLUMNS:
            if column in self._present_columns():
                continue
            exists = " IF NOT EXISTS" if self.url.dialect == "postgresql" else ""
            try:
                with self._transaction() as cursor:
                    cursor.execute(
                        f"ALTER TABLE pages ADD COLUMN{exists} {column} {kinds[column]}"
                    )
            except _ERRORS:
                if column not in self._present_columns():
                    raise

    def _present_columns(self) -> set[str]:
        """The columns table ``pages`` has (raises if there is no such table)."""
        with self._transaction() as cursor:
            cursor.execute("SELECT * FROM pages LIMIT 0")  # no input in it
            return {column[0].lower() for column in cursor.description}

    def _check_schema(self) -> None:
        try:
            self._columns = self._present_columns()
        except _ERRORS as exc:
            raise RecordsDatabaseError(
                f"no pages table in {shown(self._raw_url)}: has a crawl written "
                f"records there? ({_first_line(exc)})"
            ) from None

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor; committed at the end, rolled back on error. A connection
        that broke is closed, and the next call opens a new one."""
        if self._connection is None:
            self._connection = self._connect(create=True)
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
        of its URL unless that row was fetched later. If the database refuses a value, the rows are written one by
        one and those it refuses are returned; a connection problem raises
        ``RecordsDatabaseError`` and nothing is written."""
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

    def _write(self, rows: Sequence[Row]) -> None:
        try:
            with self._transaction() as cursor:
                cursor.executemany(self._upsert_sql, rows)
        except _ERRORS as exc:
            if self._is_data_error(exc):
                raise RowRejectedError(_first_line(exc)) from None
            self.close()  # the next write reconnects and recreates the table
            raise self._error("cannot write to", exc) from None

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

    def _error(self, doing: str, exc: Exception) -> RecordsDatabaseError:
        return RecordsDatabaseError(
            f"{doing} the records database {shown(self._raw_url)} "
            f"(RECORDS_DATABASE_URL): {_first_line(exc)}"
        )

    # --- reading -------------------------------------------------------------------

    def query(
        self,
        *,
        host: str | None = None,
        status: int | None = None,
        title: str | None = None,
        fates: Collection[str] | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The rows matching every filter given, by URL: *host* exactly, *status*
        exactly, *title* as a case-insensitive substring, *fate* one of *fates*
        (a row of an earlier version, without a fate, counts as failed when its
        status is 0); at most *limit*."""
        mark = "?" if self.url.dialect == "sqlite" else "%s"
        where: list[str] = []
        values: list[object] = []
        if host is not None:
            where.append(f"host = {mark}")
            values.append(host.lower())
        if status is not None:
            where.append(f"status = {mark}")
            values.append(status)
        if title is not None:
            like = "LIKE" if self.url.dialect == "sqlite" else "ILIKE"
            where.append(f"title {like} {mark} ESCAPE '!'")
            escaped = title.replace("!", "!!").replace("%", "!%").replace("_", "!_")
            values.append(f"%{escaped}%")
        if fates is not None:
            where.append(self._fate_filter(sorted(fates), values, mark))
        selected = (c if c in self._columns else f"NULL AS {c}" for c in COLUMNS)
        sql = f"SELECT {', '.join(selected)} FROM pages"  # noqa: S608 (no input in it)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY url"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        try:
            with self._transaction() as cursor:
                cursor.execute(sql, values)
                for row in cursor:
                    yield dict(zip(COLUMNS, row, strict=True))
        except RecordsDatabaseError:
            raise
        except _ERRORS as exc:
            raise self._error("cannot read", exc) from None

    def _fate_filter(self, fates: list[str], values: list[object], mark: str) -> str:
        """The condition "fate is one of *fates*" (appending its values). A row of
        an earlier version has no fate: it matches ``fetched`` if its status is
        not 0, and a filter asking for every failed fate if it is."""
        clauses = []
        has_fate = "fate" in self._columns
        if has_fate and fates:
            clauses.append(f"fate IN ({', '.join([mark] * len(fates))})")
            values.extend(fates)
        legacy = "fate IS NULL AND " if has_fate else ""
        if set(fates) >= FAILED_FATES:
            clauses.append(f"({legacy}status = 0)")
        if "fetched" in fates:
            clauses.append(f"({legacy}status <> 0)")
        return "(" + " OR ".join(clauses) + ")" if clauses else "1 = 0"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
