"""The page-record database (crawler/records/: database.py, connection.py, schema.py,
query.py) on a real SQLite file and a real PostgreSQL (the suite's private server, or
TEST_POSTGRES_URL): URLs, schema, upsert, queries."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from crawler.context.database import DatabaseURL, RecordsDatabaseError
from crawler.items import PageRecord
from crawler.policy.fates import FAILED_FATES
from crawler.records.database import RecordsDatabase
from crawler.records.schema import COLUMNS, row_of

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each kind: a SQLite file, a PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/records/pages.db"
    return str(request.getfixturevalue("postgres_url"))


def record(url: str, **fields: object) -> PageRecord:
    values: dict[str, object] = {
        "status": 200,
        "depth": 1,
        "title": f"title of {url}",
        "content_type": "text/html",
        "length": 1234,
        "links": 5,
        "fetched_at": "2026-01-02T03:04:05.678+00:00",
        "host": url.split("/")[2],
        "content_hash": "ab" * 32,
        "node": "node-1",
    }
    values.update(fields)
    return PageRecord(url=url, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "dialect", "target"),
    [
        ("sqlite:///.crawl/pages.db", "sqlite", ".crawl/pages.db"),
        ("sqlite:////var/crawl/pages.db", "sqlite", "/var/crawl/pages.db"),
        (
            "postgresql://u:p@db:5432/crawl",
            "postgresql",
            "postgresql://u:p@db:5432/crawl",
        ),
        ("postgres://db/crawl", "postgresql", "postgres://db/crawl"),
    ],
)
def test_a_database_url_names_its_dialect(url, dialect, target):
    assert DatabaseURL.parse(url) == DatabaseURL(dialect, target)


@pytest.mark.parametrize(
    "url",
    ["sqlite://", "sqlite:///", "sqlite://pages.db", "mysql://db/x", "pages.db", ""],
)
def test_a_bad_database_url_is_one_line_naming_the_setting(url):
    with pytest.raises(RecordsDatabaseError, match=r"^RECORDS_DATABASE_URL must be"):
        DatabaseURL.parse(url)


def test_a_password_never_shows_in_an_error():
    with pytest.raises(RecordsDatabaseError) as caught:
        DatabaseURL.parse("mysql://user:s3cret@db/x")
    assert "s3cret" not in str(caught.value)


def test_a_row_holds_only_values_every_database_takes():
    row = row_of(record("http://a.example/", title="nul\x00 and \udcff", length=2**70))
    values = dict(zip(COLUMNS, row, strict=True))
    assert values["title"] == "nul and ?"
    assert values["length"] == 2**63 - 1
    assert values["url"] == "http://a.example/"
    assert values["error"] is None


def test_rows_are_written_and_read_back(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        records = [
            record(
                f"http://h{i % 2}.example/{i}",
                text_hash=f"{i:016x}",
                near_duplicate=bool(i % 2),
            )
            for i in range(5)
        ]
        assert database.upsert([row_of(r) for r in records]) == []
        rows = list(database.query())
    finally:
        database.close()
    assert [row["url"] for row in rows] == sorted(r.url for r in records)
    first = rows[0]
    assert first == dict(zip(COLUMNS, row_of(records[0]), strict=True))
    assert [row["near_duplicate"] for row in rows] == [0, 0, 0, 1, 1]  # by URL


def test_a_refetched_url_replaces_its_row(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        database.upsert([row_of(record("http://a.example/", title="old"))])
        newer = record(
            "http://a.example/",
            status=0,
            title=None,
            length=0,
            error="ConnectionRefusedError: refused",
            fetched_at="2026-02-02T00:00:00.000+00:00",
        )
        database.upsert([row_of(newer)])
        rows = list(database.query())
    finally:
        database.close()
    assert len(rows) == 1
    assert rows[0]["status"] == 0
    assert rows[0]["title"] is None
    assert rows[0]["error"] == "ConnectionRefusedError: refused"
    assert rows[0]["fetched_at"] == "2026-02-02T00:00:00.000+00:00"


def test_an_older_record_never_replaces_a_newer_row(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        newer = record("http://a.example/", fetched_at="2026-03-01T00:00:00.000+00:00")
        older = record(
            "http://a.example/", status=0, fetched_at="2026-02-01T00:00:00.000+00:00"
        )
        database.upsert([row_of(newer)])
        database.upsert([row_of(older)])
        rows = list(database.query())
    finally:
        database.close()
    assert [(row["status"], row["fetched_at"]) for row in rows] == [
        (200, newer.fetched_at)
    ]


def test_depth_repair_lowers_a_row_s_depth_and_nothing_else(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        deep = record("http://a.example/", depth=4)
        database.upsert([row_of(deep), row_of(record("http://b.example/", depth=1))])
        # a.example lowered; b.example already shallower; c.example has no row.
        database.lower_depths(
            [
                ("http://a.example/", 2),
                ("http://b.example/", 3),
                ("http://c.example/", 1),
            ]
        )
        rows = {row["url"]: row for row in database.query()}
    finally:
        database.close()
    assert {url: row["depth"] for url, row in rows.items()} == {
        "http://a.example/": 2,
        "http://b.example/": 1,
    }
    assert rows["http://a.example/"] == dict(
        zip(COLUMNS, row_of(replace(deep, depth=2)), strict=True)
    )


def test_queries_filter_by_host_status_and_title(database_url):
    records = [
        record("http://a.example/1", title="Hello World"),
        record("http://a.example/2", title="50%_off!", status=404),
        record("http://b.example/1", title="hello again"),
        record("http://b.example/2", title=None, status=0, error="DNSLookupError"),
    ]
    database = RecordsDatabase(database_url).open()
    try:
        database.upsert([row_of(r) for r in records])

        def urls(**filters: object) -> list[str]:
            return [row["url"] for row in database.query(**filters)]  # type: ignore[arg-type]

        assert urls(host="b.example") == ["http://b.example/1", "http://b.example/2"]
        assert urls(host="B.EXAMPLE") == urls(host="b.example")
        assert urls(status=404) == ["http://a.example/2"]
        assert urls(status=0) == ["http://b.example/2"]
        assert urls(title="hello") == ["http://a.example/1", "http://b.example/1"]
        assert urls(title="%_") == ["http://a.example/2"]  # no wildcards
        assert urls(title="_") == ["http://a.example/2"]
        assert urls(host="a.example", title="hello") == ["http://a.example/1"]
        assert urls(limit=3) == [r.url for r in records[:3]]
        assert urls(host="c.example") == []
    finally:
        database.close()


def test_each_row_names_its_crawl_and_queries_filter_by_it(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        database.upsert(
            [
                row_of(record("http://a.example/1"), "bfs"),
                row_of(record("http://b.example/1"), "other"),
                row_of(record("http://c.example/1")),  # of no known crawl
            ]
        )

        def urls(**filters: object) -> list[str]:
            return [row["url"] for row in database.query(**filters)]

        assert {row["url"]: row["crawl"] for row in database.query()} == {
            "http://a.example/1": "bfs",
            "http://b.example/1": "other",
            "http://c.example/1": None,
        }
        assert urls(crawl="bfs") == ["http://a.example/1"]
        assert urls(crawl="other") == ["http://b.example/1"]
        assert urls(crawl="bfs", unknown_crawl=True) == [
            "http://a.example/1",
            "http://c.example/1",
        ]
        assert urls(crawl="none") == []
        # A URL fetched again by another crawl: its row is that crawl's now.
        refetched = record("http://a.example/1", fetched_at="2026-02-01T00:00:00+00:00")
        database.upsert([row_of(refetched, "other")])
        assert urls(crawl="other") == ["http://a.example/1", "http://b.example/1"]
    finally:
        database.close()


def test_opening_twice_keeps_the_rows(database_url):
    database = RecordsDatabase(database_url).open()
    database.upsert([row_of(record("http://a.example/"))])
    database.close()
    again = RecordsDatabase(database_url).open()
    try:
        assert len(list(again.query())) == 1
    finally:
        again.close()


def test_sqlite_is_in_wal_mode_with_both_indexes(tmp_path):
    path = tmp_path / "pages.db"
    RecordsDatabase(f"sqlite:///{path}").open().close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        indexes = {row[1] for row in connection.execute("PRAGMA index_list(pages)")}
    connection.close()
    assert {"pages_host", "pages_status"} <= indexes


def test_reading_a_missing_sqlite_file_creates_nothing(tmp_path):
    path = tmp_path / "none.db"
    with pytest.raises(RecordsDatabaseError, match="no records database at"):
        RecordsDatabase(f"sqlite:///{path}").open(create=False)
    assert not path.exists()


def test_reading_a_database_without_the_table_is_one_line(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(path).close()
    with pytest.raises(RecordsDatabaseError, match="no pages table") as caught:
        RecordsDatabase(f"sqlite:///{path}").open(create=False)
    assert "\n" not in str(caught.value)


def test_a_refused_row_is_returned_and_the_others_written(tmp_path):
    database = RecordsDatabase(f"sqlite:///{tmp_path}/pages.db").open()
    try:
        good = row_of(record("http://a.example/"))
        bad = row_of(replace(record("http://b.example/"), host=None))  # NOT NULL
        assert database.upsert([good, bad]) == [bad]
        assert [row["url"] for row in database.query()] == ["http://a.example/"]
    finally:
        database.close()


def test_an_unreachable_postgres_is_one_line_without_the_password():
    url = "postgresql://postgres:s3cret@127.0.0.1:1/test"
    with pytest.raises(RecordsDatabaseError) as caught:
        RecordsDatabase(url).open()
    message = str(caught.value)
    assert "s3cret" not in message
    assert "\n" not in message
    assert "127.0.0.1" in message


# --- fates (issue 10) ----------------------------------------------------------------

# The pages table as the version before fates wrote it (its 15 columns).
OLD_TABLE = (
    "CREATE TABLE pages (url TEXT PRIMARY KEY, host TEXT NOT NULL, depth INTEGER "
    "NOT NULL, status INTEGER NOT NULL, content_type TEXT, length BIGINT NOT NULL, "
    "title TEXT, last_modified TEXT, fetched_at TEXT NOT NULL, content_hash TEXT, "
    "store_path TEXT, tier INTEGER NOT NULL, node TEXT NOT NULL, error TEXT, "
    "links INTEGER NOT NULL)"
)
OLD_ROWS = [
    ("http://old.example/ok", "old.example", 0, 200, "text/html", 10, "t", None,
     "2026-01-01T00:00:00.000+00:00", None, None, 0, "n", None, 3),
    ("http://old.example/gone", "old.example", 1, 0, None, 0, None, None,
     "2026-01-01T00:00:00.000+00:00", None, None, 0, "n", "DNSLookupError: x", 0),
]  # fmt: skip


def fate_records() -> list[PageRecord]:
    return [
        record("http://a.example/ok"),
        record("http://a.example/moved", status=301, location="http://a.example/ok",
               fate="redirected"),
        record("http://a.example/404", status=404, fate="http_error", error="404"),
        record("http://a.example/dns", status=0, fate="network_error", error="DNS"),
        record("http://a.example/robots", status=0, fate="robots_disallowed"),
    ]  # fmt: skip


def test_fate_and_location_are_written_and_filtered(database_url):
    database = RecordsDatabase(database_url).open()
    try:
        database.upsert([row_of(r) for r in fate_records()])
        rows = {row["url"]: row for row in database.query()}
        moved = rows["http://a.example/moved"]
        assert (moved["fate"], moved["location"]) == (
            "redirected",
            "http://a.example/ok",
        )
        assert rows["http://a.example/ok"]["fate"] == "fetched"

        def urls(fates: set[str]) -> list[str]:
            return [row["url"] for row in database.query(fates=fates)]

        assert urls(FAILED_FATES) == [
            "http://a.example/404",
            "http://a.example/dns",
            "http://a.example/robots",
        ]
        assert urls({"http_error"}) == ["http://a.example/404"]
        assert urls({"redirected"}) == ["http://a.example/moved"]
        assert urls({"timed_out"}) == []
        assert urls(set()) == []
    finally:
        database.close()


def old_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(OLD_TABLE)
        connection.executemany(
            f"INSERT INTO pages VALUES ({','.join('?' * 15)})",  # noqa: S608 (marks only)
            OLD_ROWS,
        )
    connection.close()


def test_an_older_sqlite_table_gets_the_new_columns_and_index(tmp_path):
    path = tmp_path / "old.db"
    old_sqlite(path)
    url = f"sqlite:///{path}"
    reader = RecordsDatabase(url).open(create=False)  # read-only: as it is
    try:
        rows = {row["url"]: row for row in reader.query()}
        assert rows["http://old.example/ok"]["fate"] is None
        failed = [row["url"] for row in reader.query(fates=FAILED_FATES)]
        assert failed == ["http://old.example/gone"]
        assert [row["url"] for row in reader.query(crawl="bfs")] == []
        assert len(list(reader.query(crawl="bfs", unknown_crawl=True))) == 2
        fetched = [row["url"] for row in reader.query(fates={"fetched"})]
        assert fetched == ["http://old.example/ok"]
    finally:
        reader.close()
    database = RecordsDatabase(url).open()
    try:
        database.upsert([row_of(r) for r in fate_records()])
        failed = [row["url"] for row in database.query(fates=FAILED_FATES)]
        assert failed == [
            "http://a.example/404",
            "http://a.example/dns",
            "http://a.example/robots",
            "http://old.example/gone",
        ]
    finally:
        database.close()
    with sqlite3.connect(path) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(pages)")]
        indexes = {row[1] for row in connection.execute("PRAGMA index_list(pages)")}
    connection.close()
    assert columns[-8:] == [
        "fate",
        "location",
        "crawl",
        "importance",
        "inlinks",
        "content_signals",
        "text_hash",
        "near_duplicate",
    ]
    assert {"pages_fate", "pages_crawl"} <= indexes
    RecordsDatabase(url).open().close()  # a second open adds nothing, fails nothing


def test_an_older_postgres_table_gets_the_new_columns(postgres_url):
    import psycopg  # noqa: PLC0415 (only when PostgreSQL is tested)

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(OLD_TABLE)
        connection.cursor().executemany(
            f"INSERT INTO pages VALUES ({','.join(['%s'] * 15)})",  # noqa: S608 (marks only)
            OLD_ROWS,
        )
    database = RecordsDatabase(postgres_url).open()
    try:
        database.upsert([row_of(record("http://a.example/x", fate="timed_out"))])
        rows = {row["url"]: row["fate"] for row in database.query()}
        assert rows == {
            "http://a.example/x": "timed_out",
            "http://old.example/gone": None,
            "http://old.example/ok": None,
        }
        failed = [row["url"] for row in database.query(fates=FAILED_FATES)]
        assert failed == ["http://a.example/x", "http://old.example/gone"]
    finally:
        database.close()
    with psycopg.connect(postgres_url) as connection:
        indexes = connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'pages'"
        ).fetchall()
    assert ("pages_fate",) in indexes
    RecordsDatabase(postgres_url).open().close()
