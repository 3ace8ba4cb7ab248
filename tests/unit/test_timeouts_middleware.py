"""The pure helpers of crawler/middlewares/timeouts.py: Retry-After and far hosts.

Also the tier a request carries into the frontier's lease bookkeeping: a slow host's
request is fetched at tier 1, which the middleware decides after the lease is taken.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.test import get_crawler

import crawler.defaults as project
from crawler.context.startup import StartupFailure
from crawler.frontier.leases import OwnLeases
from crawler.frontier.store.store import Lease
from crawler.middlewares.timeouts import (
    MAX_RETRY_AFTER,
    TimeoutsMiddleware,
    far_hosts,
    retry_after_seconds,
)
from crawler.spiders.bfs import BfsSpider
from tests.unit.properties import PROPERTY

# --- Retry-After ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (b"5", 5.0),
        (b" 7 ", 7.0),
        (b"0", 0.0),
        (b"1.5", 1.5),
        (b"3600", 3600.0),
        (b"86400", MAX_RETRY_AFTER),  # capped
        (b"9" * 400, MAX_RETRY_AFTER),
        (b"1e9", None),
        (b"+5", None),
        (b"1_0", None),
        (b"1.2.3", None),
        (b".", None),
        (b"-1", None),
        (b"nan", None),
        (b"inf", None),
        (b"-inf", None),
        (b"Wed, 21 Oct 2015 07:28:00 GMT", None),  # an HTTP date: not honoured
        (b"0x10", None),
        (b"\xff\xfe", None),
        (b"\xef\xbc\x95", None),  # a full-width digit
        (b"5\x00", None),
        (b"", None),
        (None, None),
    ],
)
def test_retry_after_seconds(header: bytes | None, seconds: float | None) -> None:
    assert retry_after_seconds(header) == seconds


@PROPERTY
@given(st.binary(max_size=64) | st.text(max_size=32).map(str.encode))
def test_retry_after_never_raises_and_stays_within_the_cap(header: bytes) -> None:
    seconds = retry_after_seconds(header)
    assert seconds is None or 0 <= seconds <= MAX_RETRY_AFTER


@PROPERTY
@given(st.integers(min_value=0, max_value=10**30))
def test_any_delta_seconds_is_honoured_up_to_the_cap(value: int) -> None:
    assert retry_after_seconds(str(value).encode()) == min(value, MAX_RETRY_AFTER)


# --- far hosts ------------------------------------------------------------------------


def is_far(host: str) -> bool:
    """A TIMEOUTS_FAR_HOSTS function, imported by its path in the tests below."""
    return host.endswith(".far")


HOSTS = ["example.jp", "WWW.Example.JP.", "a.b.au", "jp", "jpn", "127.0.0.3", "x.far"]


@pytest.mark.parametrize(
    ("setting", "far"),
    [
        (["jp", ".AU."], {"example.jp", "WWW.Example.JP.", "a.b.au", "jp"}),
        (("jp",), {"example.jp", "WWW.Example.JP.", "jp"}),
        ("jp, au", {"example.jp", "WWW.Example.JP.", "a.b.au", "jp"}),
        ("jp,,au,", {"example.jp", "WWW.Example.JP.", "a.b.au", "jp"}),
        ('["jp", "au"]', {"example.jp", "WWW.Example.JP.", "a.b.au", "jp"}),
        (["example.jp"], {"example.jp", "WWW.Example.JP."}),
        ("example.jp", {"example.jp", "WWW.Example.JP."}),  # not importable: a suffix
        (["127.0.0.3"], {"127.0.0.3"}),
        ([], set()),
        ("", set()),
        ("[]", set()),
        (f"{__name__}.is_far", {"x.far"}),
    ],
)
def test_far_hosts(setting: object, far: set[str]) -> None:
    is_far_host = far_hosts(setting)
    assert {host for host in HOSTS if is_far_host(host)} == far


@pytest.mark.parametrize(
    "setting",
    [
        5,
        None,
        {"jp": True},
        [1],
        ["jp", None],
        ["jp", "JP"],  # repeated once normalized
        ["jp", ""],
        ["."],
        "[1]",
        '["jp", ',
        '{"jp": true}',
    ],
)
def test_bad_far_hosts_name_the_setting(setting: object) -> None:
    with pytest.raises(ValueError, match="TIMEOUTS_FAR_HOSTS"):
        far_hosts(setting)


@PROPERTY
@given(st.text(max_size=300))
def test_far_hosts_match_any_host_without_raising(host: str) -> None:
    assert far_hosts(["jp", "127.0.0.3"])(host) in (True, False)


def test_a_bad_setting_stops_the_crawl_with_one_line() -> None:
    settings = {**project_settings(), "TIMEOUTS_FAR_HOSTS": 5}
    built = TimeoutsMiddleware.from_crawler(get_crawler(settings_dict=settings))
    assert isinstance(built, StartupFailure)


def project_settings() -> dict[str, object]:
    values = {k: getattr(project, k) for k in dir(project) if k.startswith("TIMEOUTS_")}
    return {**values, "ADDONS": {"crawler.addon.Frontier": 0}}


# --- the tier a request is fetched at --------------------------------------------------


def middleware() -> TimeoutsMiddleware:
    everything = {k: getattr(project, k) for k in dir(project) if k.isupper()}
    everything["ADDONS"] = {"crawler.addon.Frontier": 0}
    crawler = get_crawler(BfsSpider, everything)
    crawler.spider = crawler._create_spider()
    built = TimeoutsMiddleware.from_crawler(crawler)
    assert isinstance(built, TimeoutsMiddleware)
    return built


@pytest.mark.parametrize(
    ("tier", "fetched_at"),
    [(0, 0), (2, 2), (9, 9), ("x", 0), (None, 0), (True, 0), (-3, 0), (1.5, 0)],
)
def test_a_stored_tier_is_used_and_a_hostile_one_is_tier_0(
    tier: object, fetched_at: int
) -> None:
    request = Request("http://a.example/", meta={"tier": tier})
    middleware().process_request(request)
    assert request.meta["tier"] == fetched_at
    timeout = request.meta["download_timeout"]
    assert timeout == project.TIMEOUTS_TIERS[min(fetched_at, 2)]
    assert math.isfinite(timeout)


def test_a_child_that_copies_a_slow_hosts_meta_leaves_its_lease_alone() -> None:
    """The lease is taken before the middleware starts a slow host's request at tier
    1; a request that copied that meta (a child) is not an escalation of it."""
    own = OwnLeases()
    parent = Request("http://slow.example/")
    own.take(Lease(3, "lease"), parent)
    parent.meta["tier"] = 1  # what process_request does for a slow host
    child = Request("http://slow.example/next", meta=dict(parent.meta))
    assert own.replaced(child) is None
    escalated = parent.replace(meta={**parent.meta, "tier": 2})
    replaced = own.replaced(escalated)
    assert replaced is not None
    assert replaced.lease == Lease(3, "lease")
