"""Quiet logs: what a crawl prints at start is what an operator reads.

Scrapy logs its start-up listings (enabled add-ons, extensions, downloader and
spider middlewares, overridden settings: about 40 lines in this project) at INFO;
here they go to DEBUG, where ``LOG_LEVEL=DEBUG`` shows them, with the values of
secret settings (``AWS_SECRET_ACCESS_KEY``, any ``*TOKEN*``, ``*PASSWORD*``) and the
passwords of URLs (``REDIS_URL``, ``RECORDS_DATABASE_URL``) withheld. The item pipelines'
list stays at INFO: it says whether pages are stored and recorded. Libraries'
DEBUG chatter (redis-py's, asyncio's, ...) is kept out while
``QUIET_LIBRARIES`` is on (the default). Both are process-wide, as Python's loggers are.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from crawler.policy.typedsettings import get_bool

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# Scrapy's loggers that print the start-up listings, and how those messages start.
LISTING_LOGGERS = ("scrapy.addons", "scrapy.middleware", "scrapy.crawler")
LISTINGS = (
    "Enabled addons:",
    "Enabled extensions:",
    "Enabled downloader middlewares:",
    "Enabled spider middlewares:",
    "Overridden settings:",
)
# A secret setting's value in the overridden settings' listing (a pprinted dict).
_SECRET_SETTING = re.compile(
    r"('\w*(?:SECRET|PASSWORD|TOKEN)\w*'): (?:'(?:[^'\\]|\\.)*'|\"[^\"]*\")"
)
# The password of a URL: scheme://user:password@host.
_URL_PASSWORD = re.compile(r"(://[^:/@\s'\"]*:)[^@/\s'\"]+@")
WITHHELD = "'***'"
# Libraries whose DEBUG lines say nothing about the crawl (redis-py logs a failed
# MAINT_NOTIFICATIONS handshake per connection, for one).
LIBRARY_LOGGERS = (
    "redis",
    "asyncio",
    "urllib3",
    "playwright",
    "scrapy_playwright",
    "psycopg",
    "aiosqlite",
    "hpack",
    "h2",
    "filelock",
    "charset_normalizer",
    "botocore",
    "boto3",
    "s3transfer",
)


class StartupListingsFilter(logging.Filter):
    """Lowers Scrapy's start-up listings from INFO to DEBUG (a logger's filter runs
    before any handler, so the handler's level then decides)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        message = record.getMessage()
        if message.startswith(LISTINGS):
            record.levelno = logging.DEBUG
            record.levelname = logging.getLevelName(logging.DEBUG)
        if message.startswith("Overridden settings:"):
            record.msg, record.args = withheld(message), None
        return True


def withheld(text: str) -> str:
    """*text* with secret settings' values and URLs' passwords replaced by ``***``."""
    text = _SECRET_SETTING.sub(lambda m: f"{m[1]}: {WITHHELD}", text)
    return _URL_PASSWORD.sub(r"\1***@", text)


def quiet_logs(settings: BaseSettings) -> None:
    """Scrapy's listings at DEBUG, libraries' DEBUG lines out while QUIET_LIBRARIES
    is on; idempotent (every crawler of a process calls it).

    Raises ``ValueError`` for a ``QUIET_LIBRARIES`` that is not a switch.
    """
    for name in LISTING_LOGGERS:
        listing_logger = logging.getLogger(name)
        if not any(
            isinstance(f, StartupListingsFilter) for f in listing_logger.filters
        ):
            listing_logger.addFilter(StartupListingsFilter())
    level = logging.INFO if get_bool(settings, "QUIET_LIBRARIES") else logging.NOTSET
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(level)
