"""Fates: what each failure means, and which ones may pass."""

from __future__ import annotations

import pytest
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest
from twisted.internet.error import ConnectionRefusedError, DNSLookupError
from twisted.web.client import ResponseNeverReceived

from crawler.frontier.holds import ForbiddenByRobots, HoldRequest
from crawler.policy.fates import fate_of_exception, fate_of_status, may_pass


def mro(exception: BaseException) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in type(exception).__mro__]


@pytest.mark.parametrize(
    ("exception", "fate"),
    [
        (DownloadTimeoutError(), "timed_out"),
        (DNSLookupError(), "network_error"),
        (ConnectionRefusedError(), "network_error"),
        (ResponseNeverReceived([]), "network_error"),
        (ConnectionResetError(), "network_error"),
        (HoldRequest("x", until=0.0, fate="robots_unreachable"), "robots_unreachable"),
        (ForbiddenByRobots("x"), "robots_disallowed"),
        (IgnoreRequest("offsite"), "ignored"),
        (ValueError("Missing scheme"), "unparseable"),
    ],
)
def test_each_exception_has_its_fate(exception, fate):
    assert fate_of_exception(mro(exception)) == fate


@pytest.mark.parametrize(
    ("status", "fate", "passes"),
    [
        (200, "fetched", False),
        (301, "redirected", False),
        (404, "http_error", False),
        (410, "http_error", False),
        (429, "http_error", True),
        (500, "http_error", True),
        (503, "http_error", True),
        (501, "http_error", False),
    ],
)
def test_statuses_have_fates_and_only_overload_answers_may_pass(status, fate, passes):
    assert fate_of_status(status) == fate
    assert may_pass(fate_of_status(status), status) is passes


@pytest.mark.parametrize(
    ("fate", "passes"),
    [
        ("network_error", True),
        ("timed_out", True),
        ("robots_unreachable", True),
        ("robots_disallowed", False),
        ("unparseable", False),
        ("ignored", False),
        ("too_large", False),
    ],
)
def test_network_trouble_may_pass_and_refusals_do_not(fate, passes):
    assert may_pass(fate) is passes
