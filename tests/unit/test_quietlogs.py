"""crawler/context/quietlogs.py: Scrapy's start-up listings go to DEBUG, the item
pipelines' list stays at INFO, libraries' DEBUG lines are out while QUIET_LIBRARIES is on."""

from __future__ import annotations

import logging
import pprint
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from crawler.context.quietlogs import (
    LIBRARY_LOGGERS,
    LISTING_LOGGERS,
    StartupListingsFilter,
    quiet_logs,
)

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def restored_loggers() -> Iterator[None]:
    """Python's loggers are the process's: each test leaves them as it found them."""
    loggers = [logging.getLogger(n) for n in (*LISTING_LOGGERS, *LIBRARY_LOGGERS)]
    saved = [(lg, lg.level, list(lg.filters)) for lg in loggers]
    yield
    for lg, level, filters in saved:
        lg.setLevel(level)
        lg.filters[:] = filters


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(
        "scrapy.middleware", logging.INFO, "", 0, message, args, None
    )


@pytest.mark.parametrize(
    ("message", "args", "level"),
    [
        (
            "Enabled %(componentname)ss:\n%(enabledlist)s",
            "downloader middleware",
            "DEBUG",
        ),
        ("Enabled %(componentname)ss:\n%(enabledlist)s", "item pipeline", "INFO"),
        ("Overridden settings:\n%(settings)s", None, "DEBUG"),
        ("Spider opened", None, "INFO"),
    ],
)
def test_listings_are_lowered_to_debug(
    message: str, args: str | None, level: str
) -> None:
    values = {"componentname": args, "enabledlist": "[...]", "settings": "{}"}
    log_record = record(message, values)
    assert StartupListingsFilter().filter(log_record)
    assert (log_record.levelname, log_record.levelno) == (
        level,
        logging.getLevelName(level),
    )


def test_library_debug_lines_are_off_unless_asked() -> None:
    quiet_logs(Settings({"QUIET_LIBRARIES": True}))
    assert not logging.getLogger("redis.connection").isEnabledFor(logging.DEBUG)
    quiet_logs(Settings({"QUIET_LIBRARIES": "False"}))
    assert logging.getLogger("redis").level == logging.NOTSET


def test_the_filter_is_installed_once() -> None:
    quiet_logs(Settings())
    quiet_logs(Settings())
    middleware = logging.getLogger("scrapy.middleware")
    assert sum(isinstance(f, StartupListingsFilter) for f in middleware.filters) == 1


def test_a_bad_switch_is_refused() -> None:
    with pytest.raises(ValueError, match="QUIET_LIBRARIES"):
        quiet_logs(Settings({"QUIET_LIBRARIES": "sometimes"}))


def test_secret_settings_and_url_passwords_are_withheld_from_the_listing() -> None:
    overridden = {
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "s3cr'et/key",
        "AWS_SESSION_TOKEN": "session-token-value",
        "DASHBOARD_PASSWORD": "hunter2",
        "REDIS_URL": "redis://:redispass@127.0.0.1:6379/0",
        "RECORDS_DATABASE_URL": "postgresql://crawler:pgpass@db/crawl",
        "BOT_NAME": "crawler",
    }
    log_record = record(
        "Overridden settings:\n%(settings)s", {"settings": pprint.pformat(overridden)}
    )
    assert StartupListingsFilter().filter(log_record)
    shown = log_record.getMessage()
    for secret in ("s3cr", "session-token-value", "hunter2", "redispass", "pgpass"):
        assert secret not in shown
    assert "'AWS_SECRET_ACCESS_KEY': '***'" in shown
    assert "redis://:***@127.0.0.1:6379/0" in shown
    assert "postgresql://crawler:***@db/crawl" in shown
    assert "'BOT_NAME': 'crawler'" in shown
    assert "AKIAEXAMPLE" in shown  # an access key id is not a secret
