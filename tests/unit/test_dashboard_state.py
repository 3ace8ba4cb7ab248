"""The dashboard's state built from what Redis returned: the pages-a-minute rings
of the nodes, host rows and text, whatever Redis holds."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.crawlstate.status import CrawlStatus, NodeStatus
from crawler.dashboard.state import (
    _host_row,
    _paused,
    pace_series,
    status_state,
    text,
)
from crawler.frontier.node.progress import PACE_MINUTES, pace_fields
from crawler.policy.tiers import HostHealth

NOW = 1_800_000_000.0  # minute 30_000_000
MINUTE = int(NOW // 60)


def ring(counts: dict[int, int]) -> dict[bytes, bytes]:
    """A node's ring as HGETALL returns it, from minute -> pages."""
    fields: dict[bytes, bytes] = {}
    for minute, pages in counts.items():
        minute_field, pages_field = pace_fields(minute)
        fields[minute_field.encode()] = str(minute).encode()
        fields[pages_field.encode()] = str(pages).encode()
    return fields


def test_the_last_hour_oldest_first_summed_over_nodes():
    series = pace_series(
        {
            "a": ring({MINUTE: 5, MINUTE - 1: 60, MINUTE - 59: 1}),
            "b": ring({MINUTE: 2}),
        },
        now=NOW,
    )
    assert series["minutes"] == list(range(MINUTE - 59, MINUTE + 1))
    assert series["nodes"]["a"][-1] == 5
    assert series["nodes"]["a"][-2] == 60
    assert series["nodes"]["a"][0] == 1
    assert sum(series["nodes"]["a"]) == 66
    assert series["nodes"]["b"] == [0] * 59 + [2]
    assert series["cluster"] == [1] + [0] * 57 + [60, 7]


def test_a_slot_of_an_older_hour_counts_nothing():
    """The ring wrapped: slot 'MINUTE - 60' shares MINUTE's slot but is stale."""
    series = pace_series({"a": ring({MINUTE - 60: 99})}, now=NOW)
    assert series["cluster"] == [0] * PACE_MINUTES


def test_no_node_an_hour_of_zeros():
    series = pace_series({}, now=NOW)
    assert series == {
        "minutes": list(range(MINUTE - 59, MINUTE + 1)),
        "cluster": [0] * 60,
        "nodes": {},
    }


@given(
    st.dictionaries(
        st.text(max_size=20),
        st.one_of(
            st.dictionaries(st.binary(max_size=8), st.binary(max_size=12), max_size=8),
            st.integers(),
            st.none(),
            st.binary(),
        ),
        max_size=5,
    )
)
def test_whatever_redis_holds_gives_an_hour_of_counts(rings):
    series = pace_series(rings, now=NOW)
    assert len(series["cluster"]) == PACE_MINUTES
    assert all(count >= 0 for count in series["cluster"])
    assert set(series["nodes"]) == {text(node) for node in rings}
    json.dumps(series, ensure_ascii=True)


def test_a_negative_count_written_by_hand_is_zero():
    fields = ring({MINUTE: 0})
    fields[pace_fields(MINUTE)[1].encode()] = b"-40"
    assert pace_series({"a": fields}, now=NOW)["cluster"][-1] == 0


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("example.org", "example.org"),
        ("<b>x</b>", "<b>x</b>"),  # the page shows it as text
        (b"\xff\xfeab".decode("utf-8", "surrogateescape"), "\\udcff\\udcfeab"),
        ("x" * 300, "x" * 199 + "…"),
    ],
)
def test_text_is_valid_utf8_and_cut(value, shown):
    assert text(value) == shown
    assert len(text(value)) <= 200
    text(value).encode("utf-8")


def test_a_host_row_reads_counts_and_keeps_hostile_values_as_text():
    row = _host_row(
        "h.example",
        {b"requests": b"12", b"5xx": b"oops", b"delay": b"2.5", b"reason": b"<i>"},
        b'{"e":[],"s":true,"ok":0,"d":0,"p":0}',
        NOW,
    )
    assert row["host"] == "h.example"
    assert row["requests"] == 12
    assert row["5xx"] == 0  # not a count
    assert row["failures"] == 0  # absent
    assert (row["delay"], row["reason"], row["health"]) == ("2.5", "<i>", "slow")
    assert _host_row("h", Exception("WRONGTYPE"), b"junk", NOW)["health"] == "?"


def test_the_status_part_is_status_own_totals():
    status = CrawlStatus("crawl", 4, acked=9, held=1, queued=3)
    status.fates = {"fetched": 6, "http_error": 2, "timed_out": 1}
    status.by_depth = {2: 1, 0: 2}
    status.nodes = [NodeStatus("n1", alive=True, heartbeat=NOW - 4, shards=(0, 1, 3))]
    state = status_state(status, now=NOW)
    assert state["state"] == "running"
    assert state["totals"]["failed"] == 3
    assert state["totals"]["failed_by_fate"] == {"http_error": 2, "timed_out": 1}
    assert state["by_depth"] == [[0, 2], [2, 1]]
    assert state["nodes"][0]["shards"] == "0-1,3"
    assert state["nodes"][0]["heartbeat_age"] == 4


def test_paused_hosts_are_those_whose_record_pauses_them_now():
    records = {
        "now": HostHealth(paused_until=NOW + 60).to_json().encode(),
        "far": HostHealth(slow=True, paused_until=1e20).to_json().encode(),
        "ended": HostHealth(paused_until=NOW - 1).to_json().encode(),
        "never": HostHealth(slow=True).to_json().encode(),
        "junk": b'{"p": 1e30} not a record "p":1e30}',
        "partial": b'{"p":1e30}',  # fields missing: not ours
    }
    assert _paused(records, NOW) == 2
