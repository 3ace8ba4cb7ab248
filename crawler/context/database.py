"""Which database a URL setting names, and connecting to it: the page records'
(``RECORDS_DATABASE_URL``) and the frontier's spilled queues'
(``FRONTIER_SPILL_DATABASE_URL``).

``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` (SQLAlchemy's
spelling), or ``postgresql://user:password@host:port/db`` (``postgres://`` too; any
libpq option, such as ``?options=-csearch_path%3Dcrawl``, passes through). Only
PostgreSQL users need psycopg: it is imported when such a URL is opened. Every
problem is a ``RecordsDatabaseError`` of one line, password hidden.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawler.context.directories import (
    UnwritableDirectoryError,
    check_writable_directory,
)
from crawler.crawlstate.connection import masked

# Seconds to wait for a PostgreSQL server (unless the URL sets connect_timeout), and
# for a SQLite file another process is writing.
CONNECT_TIMEOUT = 10
SQLITE_BUSY_TIMEOUT = 10.0
# Seconds between two tries of switching a new SQLite file to WAL.
WAL_RETRY_INTERVAL = 0.05


class RecordsDatabaseError(RuntimeError):
    """What is wrong with the database, in one line fit for an operator."""


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


DRIVER_ERRORS = _driver_errors()


@dataclass(frozen=True, slots=True)
class DatabaseURL:
    """A parsed database URL: ``sqlite`` with a path, or ``postgresql``."""

    dialect: str
    target: str  # the SQLite path, or the libpq URL
    setting: str = "RECORDS_DATABASE_URL"  # the setting it came from, for messages

    @classmethod
    def parse(cls, url: str, setting: str = "RECORDS_DATABASE_URL") -> DatabaseURL:
        """Raises ``RecordsDatabaseError`` naming *setting* for a URL of neither kind."""
        scheme = url.partition("://")[0].lower()
        if scheme == "sqlite" and url[len("sqlite://") :].startswith("/"):
            path = url[len("sqlite:///") :]
            if path:
                return cls("sqlite", path, setting)
        elif scheme in ("postgresql", "postgres"):
            return cls("postgresql", url, setting)
        raise RecordsDatabaseError(
            f"{setting} must be sqlite:///path or postgresql://..., got {shown(url)!r}"
        )

    def connect(self, *, create: bool) -> Any:
        """A new DB-API connection; without *create*, a read-only one to a SQLite
        file that must exist. Raises the driver's errors, or ``RecordsDatabaseError``."""
        if self.dialect == "sqlite":
            return self._connect_sqlite(create=create)
        try:
            import psycopg  # noqa: PLC0415 (only PostgreSQL users need the driver)
            from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
        except ImportError:
            raise RecordsDatabaseError(
                f"{self.setting} is a PostgreSQL URL but psycopg is not "
                "installed: pip install 'psycopg[binary]'"
            ) from None
        options: dict[str, Any] = {}
        if "connect_timeout" not in conninfo_to_dict(self.target):
            options["connect_timeout"] = CONNECT_TIMEOUT
        return psycopg.connect(self.target, **options)

    def _connect_sqlite(self, *, create: bool) -> sqlite3.Connection:
        path = Path(self.target)
        if create:
            _writable_parent(path, self.setting)
            target, uri = self.target, False
        else:
            if not path.is_file():
                raise RecordsDatabaseError(
                    f"no records database at {self.target!r} "
                    f"({self.setting}): has a crawl written one?"
                )
            target, uri = f"{path.resolve().as_uri()}?mode=ro", True
        connection = sqlite3.connect(
            target, timeout=SQLITE_BUSY_TIMEOUT, uri=uri, check_same_thread=False
        )
        if create:
            _use_wal(connection)
            # No fsync a commit: a commit survives the crawler's crash or kill -9
            # (what the lease acknowledgement waits for); only a power cut may take
            # the last ones, as it would the page store's files and Redis' state.
            # On the Python docs it cut a crawl's CPU by a fifth and its time by a
            # third.
            connection.execute("PRAGMA synchronous=NORMAL")
        return connection


def _use_wal(connection: sqlite3.Connection) -> None:
    """Readers never block the writer. Switching a new file to WAL takes a lock
    SQLite does not wait for (no busy handler): when several nodes create one
    database at once, a switch may find another node's schema write in progress
    ("database is locked" at once), so it is tried again until the busy timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_INTERVAL)


def shown(url: str) -> str:
    """*url* with any password hidden, for messages."""
    try:
        return masked(url)
    except ValueError:  # a port that is not a number
        return url.rsplit("@", maxsplit=1)[-1]


def first_line(exc: BaseException) -> str:
    """The first line of *exc*'s text (its class name if it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _writable_parent(path: Path, setting: str) -> None:
    """Make the directory of the SQLite file *path*; ``RecordsDatabaseError``
    (one line) if the crawl cannot write there."""
    try:
        check_writable_directory(path.parent, f"{setting}'s directory")
    except UnwritableDirectoryError as exc:
        raise RecordsDatabaseError(str(exc)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
