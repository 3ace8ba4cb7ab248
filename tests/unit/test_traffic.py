"""Traffic counting and the `scrapy frontier hosts` table, without Redis."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.middlewares.traffic import TrafficMiddleware
from crawler.middlewares.trafficbuffer import HostTraffic, TrafficBuffer, status_class
from crawler.policy.trafficconfig import TrafficConfig
from crawler.reports.hosts import CELL_WIDTH, cell, host_table, utc_time


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, "2xx"),
        (204, "2xx"),
        (301, "3xx"),
        (304, "3xx"),
        (404, "4xx"),
        (429, "4xx"),
        (500, "5xx"),
        (599, "5xx"),
        (100, "other"),
        (199, "other"),
        (600, "other"),
        (999, "other"),
        (0, "other"),
        (-1, "other"),
    ],
)
def test_status_class(status, expected):
    assert status_class(status) == expected


def test_the_buffer_counts_by_host_and_is_taken_whole():
    buffer = TrafficBuffer()
    assert not buffer
    buffer.request("a")
    buffer.request("a")
    buffer.response("a", status=200, size=100, now=5.0)
    buffer.error("a", now=6.0)
    buffer.request("b")
    buffer.response("b", status=404, size=10, now=4.0)
    taken = buffer.take()
    assert not buffer
    assert dict(taken["a"].counts) == {
        "requests": 2,
        "bytes": 100,
        "2xx": 1,
        "errors": 1,
        "failures": 1,
    }
    assert taken["a"].last_fetch == 6.0
    assert dict(taken["b"].counts) == {
        "requests": 1,
        "bytes": 10,
        "4xx": 1,
        "failures": 1,
    }


def test_counts_put_back_after_a_failed_flush_add_up():
    buffer = TrafficBuffer()
    buffer.request("a")
    buffer.response("a", status=200, size=100, now=9.0)
    taken = buffer.take()
    buffer.request("a")
    buffer.response("a", status=500, size=1, now=8.0)
    buffer.put_back(taken)
    again = buffer.take()["a"]
    assert dict(again.counts) == {
        "requests": 2,
        "bytes": 101,
        "2xx": 1,
        "5xx": 1,
        "failures": 1,
    }
    assert again.last_fetch == 9.0


def test_merging_keeps_the_latest_fetch():
    first = HostTraffic(last_fetch=None)
    first.merge(HostTraffic(last_fetch=3.0))
    assert first.last_fetch == 3.0
    first.merge(HostTraffic(last_fetch=None))
    assert first.last_fetch == 3.0


def middleware() -> TrafficMiddleware:
    return TrafficMiddleware(
        get_crawler(settings_dict={"ADDONS": {"crawler.addon.Frontier": 0}}),
        CrawlKeys("bfs"),
        TrafficConfig(idle_ttl=60, rank_size=10),
        clock=lambda: 42.0,
    )


def test_the_middleware_counts_what_reached_the_downloader():
    mw = middleware()
    ok = Request("http://a.example:8080/page")
    mw.process_request(ok)
    body = b"x" * 123
    assert mw.process_response(ok, Response(ok.url, status=200, body=body)) is not None
    failed = Request("http://a.example/gone")
    mw.process_request(failed)
    mw.process_exception(failed, TimeoutError())
    robots = Request("http://B.example/robots.txt")
    mw.process_request(robots)
    mw.process_response(robots, Response(robots.url, status=404, body=b"nope"))
    taken = mw.buffer.take()
    assert set(taken) == {"a.example", "b.example"}  # the host, without the port
    assert dict(taken["a.example"].counts) == {
        "requests": 2,
        "bytes": 123,
        "2xx": 1,
        "errors": 1,
        "failures": 1,
    }
    assert taken["a.example"].last_fetch == 42.0
    # A robots.txt that is not there is no failure of the host.
    assert dict(taken["b.example"].counts) == {"requests": 1, "bytes": 4, "4xx": 1}


def test_what_never_reached_the_downloader_is_not_counted():
    """An earlier middleware refused it (robots), or answered it (a cache)."""
    mw = middleware()
    refused = Request("http://a.example/private")
    mw.process_exception(refused, IgnoreRequest())
    cached = Request("http://a.example/cached")
    mw.process_response(cached, Response(cached.url, status=200, body=b"cached"))
    mw.process_request(Request("data:,no-host"))
    assert not mw.buffer


# --- the table -------------------------------------------------------------------


def test_the_table_lists_hosts_in_the_order_given_with_aligned_columns():
    rows = [
        (
            "a.example",
            {
                "requests": "120",
                "bytes": "456789",
                "2xx": "118",
                "4xx": "2",
                "last_fetch": "1795000000.5",
                "delay": "10",
                "reason": "day",
            },
        ),
        ("b.example", {"requests": "7", "errors": "7", "delay": "0.5"}),
    ]
    lines = host_table(rows).splitlines()
    assert lines[0].split() == [
        "host",
        "requests",
        "bytes",
        "2xx",
        "3xx",
        "4xx",
        "5xx",
        "errors",
        "traps",
        "last",
        "fetch",
        "(UTC)",
        "delay",
        "reason",
    ]
    assert lines[1].split() == [
        "a.example",
        "120",
        "456789",
        "118",
        "0",
        "2",
        "0",
        "0",
        "0",
        "2026-11-18T11:06:40Z",
        "10s",
        "day",
    ]
    assert lines[2].split() == [
        "b.example", "7", "0", "0", "0", "0", "0", "7", "0", "0.5s"
    ]  # fmt: skip
    assert lines[1].index("120") + 3 == lines[2].index("7") + 1  # right-aligned


def test_hostile_values_are_shown_as_they_are_and_never_crash():
    rows = [
        (
            "evil\x1b[2J.example",
            {
                "requests": "lots",
                "bytes": "-1",
                "last_fetch": "yesterday",
                "delay": "forever",
                "reason": "x" * 500,
                "unknown": "field",
            },
        ),
        ("empty.example", {}),
        ("huge.example", {"last_fetch": "1e300"}),
    ]
    table = host_table(rows)
    assert "\x1b" not in table
    assert "evil\\x1b[2J.example" in table
    for value in ("lots", "-1", "yesterday", "forever"):
        assert value in table
    assert "1e300" in table
    assert max(len(line) for line in table.splitlines()) < 400


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0", "1970-01-01T00:00:00Z"),
        ("1795000000.5", "2026-11-18T11:06:40Z"),
        ("", ""),
        ("nan", "nan"),
        ("inf", "inf"),
        ("-1e20", "-1e20"),
        ("soon", "soon"),
    ],
)
def test_utc_time(value, shown):
    assert utc_time(value) == shown


def test_cells_are_cut_and_escaped():
    assert cell("a\tb\nc") == "a\\tb\\nc"
    assert len(cell("x" * 1000)) == CELL_WIDTH
    assert cell("x" * 1000).endswith("…")
    assert cell("bücher.example") == "bücher.example"


def test_cut_links_and_soft_404s_count_as_the_hosts_traps():
    buffer = TrafficBuffer()
    buffer.trap("a.example")
    buffer.trap("a.example")
    buffer.response("a.example", status=200, size=10, now=1.0)
    taken = buffer.take()
    assert taken["a.example"].counts["traps"] == 2
    assert taken["a.example"].counts["failures"] == 0  # a trap is no failure


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"TRAFFIC_IDLE_TTL": 0}, ["TRAFFIC_IDLE_TTL", ">= 1"]),
        ({"TRAFFIC_IDLE_TTL": "a day"}, ["TRAFFIC_IDLE_TTL"]),
        ({"TRAFFIC_RANK_SIZE": 0}, ["TRAFFIC_RANK_SIZE", ">= 1"]),
        ({"TRAFFIC_RANK_SIZE": 2.5}, ["TRAFFIC_RANK_SIZE", "integer"]),
    ],
)
def test_bad_traffic_settings_are_refused_in_one_line(settings, words):
    with pytest.raises(ValueError, match=words[0]) as raised:
        TrafficConfig.from_settings(
            {"TRAFFIC_IDLE_TTL": 60, "TRAFFIC_RANK_SIZE": 9, **settings}
        )
    assert all(word in str(raised.value) for word in words)
    assert "\n" not in str(raised.value)


def test_an_idle_ttl_in_fractions_of_a_second_is_whole_seconds():
    config = TrafficConfig.from_settings(
        {"TRAFFIC_IDLE_TTL": 1.6, "TRAFFIC_RANK_SIZE": 1}
    )
    assert (config.idle_ttl, config.rank_size) == (2, 1)
