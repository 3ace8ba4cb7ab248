"""Responses too large get fate too_large from their exception's class, not a message."""

from __future__ import annotations

from scrapy.exceptions import DownloadCancelledError, IgnoreRequest

from crawler.middlewares.sizes import ResponseTooLargeError
from crawler.policy.fates import fate_of_exception


def names(exception_class: type) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in exception_class.__mro__]


def test_a_body_too_large_once_decompressed_is_too_large():
    assert fate_of_exception(names(ResponseTooLargeError)) == "too_large"


def test_a_body_cut_by_the_download_handler_is_too_large():
    assert fate_of_exception(names(DownloadCancelledError)) == "too_large"


def test_a_plain_ignore_request_stays_what_it_was():
    assert fate_of_exception(names(IgnoreRequest)) == "ignored"
