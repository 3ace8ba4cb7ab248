"""The URL library's table on a real database: claims, their end and their expiry,
with SQLite in tmp_path and PostgreSQL (the suite's private server, or
TEST_POSTGRES_URL)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from crawler.policy.laziness import LazinessConfig
from crawler.policy.revisitconfig import Bounds, RevisitConfig
from crawler.records.database import RecordsDatabase
from crawler.records.library import URLLibrary
from crawler.records.visits import Visit
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

INTERVAL = 100.0
CLAIM_TIMEOUT = 60.0


# The site factor off: the tests of one page's interval keep it to the page's own.
NO_SITE_FACTOR = LazinessConfig(site_min_factor=1.0, site_max_factor=1.0)


def config(
    policy: str = "uniform", laziness: LazinessConfig = NO_SITE_FACTOR
) -> RevisitConfig:
    return RevisitConfig(
        policy=policy,
        bounds=Bounds(INTERVAL, 10.0, 1000.0),
        overrides=(),
        gone_after=3,
        feed_interval=1.0,
        feed_batch=100,
        claim_timeout=CLAIM_TIMEOUT,
        conditional=True,
        laziness=laziness,
    )


def visit(page: int, body: str = "same") -> Visit:
    return Visit(
        url=f"http://127.0.0.2/{page}",
        host="127.0.0.2",
        depth=page % 3,
        status=200,
        fate="fetched",
        content_hash=body,
        etag=f'"{page}"',
        last_modified=None,
    )


@pytest.fixture
def libraries(database_url: str) -> Iterator[tuple[URLLibrary, URLLibrary]]:  # noqa: F811
    """Two nodes' libraries: one database, two connections."""
    databases = [RecordsDatabase(database_url).open() for _ in range(2)]
    first, second = (URLLibrary(database, config()) for database in databases)
    first.create()
    second.create()
    yield first, second
    for database in databases:
        database.close()


def test_urls_are_due_after_their_interval_earliest_first(libraries) -> None:
    library, _ = libraries
    for page in range(5):
        library.record([visit(page)], now=1000.0 + page)
    assert library.claim(1000.0 + INTERVAL - 1, limit=10) == []
    due = library.claim(1000.0 + INTERVAL + 2, limit=10)
    assert [d.url for d in due] == [f"http://127.0.0.2/{page}" for page in range(3)]
    assert [d.next_visit for d in due] == [1100.0, 1101.0, 1102.0]
    assert [(d.depth, d.etag, d.content_hash) for d in due] == [
        (page % 3, f'"{page}"', "same") for page in range(3)
    ]
    assert library.outstanding(1103.0) == 3
    assert library.has_scheduled()


def test_a_claimed_url_is_not_claimed_again_until_recorded_or_expired(libraries):
    first, second = libraries
    first.record([visit(1), visit(2)], now=0.0)
    assert len(first.claim(200.0, limit=1)) == 1
    assert len(second.claim(200.0, limit=10)) == 1  # only the other one
    assert second.claim(201.0, limit=10) == []
    # An unrecorded claim (its request lost) expires...
    again = second.claim(200.0 + CLAIM_TIMEOUT + 1, limit=10)
    assert len(again) == 2
    # ...a recorded one ends, and the next visit is an interval later.
    first.record([visit(1)], now=300.0)
    assert first.outstanding(301.0) == 1
    assert first.claim(320.0, limit=10) == []  # 2 claimed until 321, 1 due at 400
    assert [d.url for d in first.claim(399.0, limit=10)] == ["http://127.0.0.2/2"]
    assert [d.url for d in first.claim(400.0, limit=10)] == ["http://127.0.0.2/1"]


def test_nodes_claiming_at_once_never_share_a_url(libraries) -> None:
    first, _second = libraries
    first.record([visit(page) for page in range(200)], now=0.0)
    claimed: list[list[str]] = [[], []]

    def claim_all(index: int, library: URLLibrary) -> None:
        for _round in range(50):  # bounded: 200 URLs, 10 a claim, two claimers
            due = library.claim(500.0, limit=10)
            claimed[index].extend(d.url for d in due)

    threads = [
        threading.Thread(target=claim_all, args=(index, library))
        for index, library in enumerate(libraries)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not set(claimed[0]) & set(claimed[1])
    assert len(claimed[0]) + len(claimed[1]) == 200


def test_a_gone_library_has_nothing_scheduled(database_url: str) -> None:  # noqa: F811
    database = RecordsDatabase(database_url).open()
    try:
        library = URLLibrary(database, config())
        library.create()
        assert not library.has_scheduled()
        failed = Visit(
            "http://127.0.0.2/x", "127.0.0.2", 0, 404, "http_error", None, None, None
        )
        library.record([failed], now=0.0)
        assert not library.has_scheduled()  # its first visit failed: never revisited
    finally:
        database.close()


def test_nodes_creating_the_tables_at_once_all_open(database_url: str) -> None:  # noqa: F811
    """Nodes started together each create the tables if missing: none fails on
    the other's CREATE (PostgreSQL's catalog race)."""
    errors: list[Exception] = []

    def open_library() -> None:
        try:
            database = RecordsDatabase(database_url).open()
            URLLibrary(database, config()).create()
            database.close()
        except Exception as exc:  # noqa: BLE001 (collected for the assertion)
            errors.append(exc)

    threads = [threading.Thread(target=open_library) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


def revisit_two_pages(address: str, laziness: LazinessConfig) -> dict[str, float]:
    """Twelve revisits of two pages of one host, a page that changes every other
    check and one that never does: each one's interval after them."""
    database = RecordsDatabase(address).open()
    try:
        library = URLLibrary(database, config("adaptive", laziness))
        library.create()
        with database.transaction() as cursor:  # a second call starts afresh
            cursor.execute("DELETE FROM revisits")
        now = 0.0
        library.record([visit(1, "v0"), visit(2, "static")], now)
        for check in range(1, 13):  # bounded: twelve revisits of both pages
            now += INTERVAL
            # Page 1 changes every other check, page 2 never.
            library.record([visit(1, f"v{check // 2}"), visit(2, "static")], now)
        due = {d.url: d.next_visit - now for d in library.claim(now + 10_000, 10)}
        factors = library.site_factors
    finally:
        database.close()
    if laziness == NO_SITE_FACTOR:
        assert factors == {}
    else:  # as of the library's last look, before the last visits
        assert 3 < factors["127.0.0.2"] < 4
    return due


def test_adaptive_revisits_a_changing_page_sooner_than_a_static_one(database_url):  # noqa: F811
    due = revisit_two_pages(database_url, NO_SITE_FACTOR)
    changing, static = due["http://127.0.0.2/1"], due["http://127.0.0.2/2"]
    assert changing < INTERVAL < static


def test_a_lazy_host_stretches_both_pages_intervals(database_url):  # noqa: F811
    """The same host with its factor (about 3.5: few of its checks found a
    change): both pages come back later than on their own, the changing one still
    sooner."""
    own = revisit_two_pages(database_url, NO_SITE_FACTOR)
    lazy = revisit_two_pages(database_url, LazinessConfig())
    for url, interval in own.items():
        assert lazy[url] > interval, url
    assert lazy["http://127.0.0.2/1"] < lazy["http://127.0.0.2/2"]
