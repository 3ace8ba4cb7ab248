"""The exit status of `scrapy crawl` says what became of the crawl."""

from __future__ import annotations

import pytest

from crawler.policy.exitcodes import (
    FINISHED,
    FORCED_SHUTDOWN,
    NOTHING_FETCHED,
    STARTUP_FAILED,
    crawl_exit_code,
)

FETCHED = {"downloader/request_count": 3, "downloader/response_count": 2}


@pytest.mark.parametrize(
    ("stats", "failed_to_start", "code"),
    [
        ({"finish_reason": "finished", **FETCHED}, False, FINISHED),
        # One Ctrl-C: stopped cleanly, the frontier keeps the rest.
        ({"finish_reason": "shutdown", **FETCHED}, False, FINISHED),
        ({"finish_reason": "closespider_timeout", **FETCHED}, False, FINISHED),
        # A node that had nothing to fetch (another node did it all) did no harm.
        ({"finish_reason": "finished"}, False, FINISHED),
        (
            {"finish_reason": "finished", "downloader/request_count": 4},
            False,
            NOTHING_FETCHED,
        ),
        ({"finish_reason": "startup_failed"}, True, STARTUP_FAILED),
        ({}, True, STARTUP_FAILED),
        # Never closed: a second Ctrl-C cut it short.
        (FETCHED, False, FORCED_SHUTDOWN),
        ({}, False, FORCED_SHUTDOWN),
    ],
)
def test_the_exit_status_says_what_became_of_the_crawl(stats, failed_to_start, code):
    assert crawl_exit_code(stats, failed_to_start=failed_to_start) == code
