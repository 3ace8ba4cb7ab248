"""A rendered page over its time is a timeout of its tier: Playwright's own
TimeoutError is recognised as Scrapy's and Twisted's are; other errors are not."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy.exceptions import DownloadFailedError, DownloadTimeoutError

from crawler.middlewares.timeouts import is_timeout


@pytest.mark.parametrize(
    ("error", "timeout"),
    [
        (PlaywrightTimeoutError("Timeout 1000ms exceeded"), True),
        (DownloadTimeoutError("took too long"), True),
        (PlaywrightError("net::ERR_CONNECTION_REFUSED"), False),
        (DownloadFailedError("failed"), False),
        (TimeoutError("asyncio's own: the handler turns it into Scrapy's"), False),
    ],
)
def test_timeouts_recognised(error, timeout):
    assert is_timeout(error) is timeout
