"""Fixtures: a real Redis (private or TEST_REDIS_URL), a real PostgreSQL (private or
TEST_POSTGRES_URL), the local site, settings."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
import redis as redis_py

import crawler.settings as project
from crawler import defaults
from tests.servers import (
    RestartableRedis,
    postgres_for_tests,
    redis_for_tests,
    running_site,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.servers import RunningSite

# Settings every in-process test crawl gets on top of the project's own.
TEST_OVERRIDES: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "FRONTIER_MAINTENANCE_INTERVAL": 0.5,
    "FRONTIER_LEASE_TIMEOUT": 5.0,
    "FRONTIER_SHARDS": 8,
    "ROBOTSTXT_OBEY": False,
    # One probe an origin for a missing page: tests/integration/test_traps.py's.
    "TRAPS_SOFT_404": False,
    # Politeness tests set their own delays; the rest crawl as fast as the site allows.
    "POLITENESS_DAY_DELAY": 0.0,
    "POLITENESS_NIGHT_DELAY": 0.0,
    "POLITENESS_JITTER": 0.0,
    # Storage tests set their own directories and databases (under tmp_path).
    "PAGESTORE_URL": "",
    "RECORDS_DATABASE_URL": "",
    "FRONTIER_EMBEDDED_REDIS_DIR": "",
    "FRONTIER_RUNNING_DIR": "",
    # Failures are final at once unless a test is about retry-later (its delays are
    # minutes by default); tests/integration/test_retry_later.py sets its own.
    "RETRY_LATER_DELAYS": [],
}


@pytest.fixture(scope="session")
def redis_url_session() -> Iterator[str]:
    with redis_for_tests() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url_session() -> Iterator[str]:
    """The test PostgreSQL, started by the first test that needs it: tests take a
    schema of their own in it (``postgres_url`` in tests/unit/test_records.py)."""
    with postgres_for_tests() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_url_session: str) -> Iterator[str]:
    """The test PostgreSQL in a schema of its own, dropped after the test."""
    import psycopg  # noqa: PLC0415 (only when PostgreSQL is tested)

    server = postgres_url_session
    schema = f"records_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in server else "?"
    yield f"{server}{separator}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def redis_url(redis_url_session: str) -> Iterator[str]:
    """The test Redis, empty before and after the test."""
    client = redis_py.Redis.from_url(redis_url_session)
    client.flushdb()
    yield redis_url_session
    client.flushdb()
    client.close()


@pytest.fixture
def redis(redis_url: str) -> Iterator[redis_py.Redis]:
    client = redis_py.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def site() -> Iterator[RunningSite]:
    """The default site: 4 hosts x 30 pages, 5 links a page."""
    with running_site() as running:
        yield running


@pytest.fixture
def settings(redis_url: str) -> Callable[..., dict[str, Any]]:
    """``settings(KEY=value, ...)``: the project's settings for a test crawl, with
    every default the add-on gives spelled out (so tests can build configs from it)."""

    def make(**overrides: Any) -> dict[str, Any]:
        values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
        values.update({k: getattr(project, k) for k in dir(project) if k.isupper()})
        values.update(TEST_OVERRIDES, REDIS_URL=redis_url)
        values.update(overrides)
        return values

    return make


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[RestartableRedis]:
    """A private Redis a test may stop, restart or kill (Redis going away)."""
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
