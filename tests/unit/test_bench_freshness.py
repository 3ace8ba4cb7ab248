"""The freshness benchmark's arithmetic and its changing site, on hand-made cases."""

from __future__ import annotations

import http.client
import itertools
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.changingsite import (
    PageSchedule,
    not_modified,
    page_schedule,
    version_at,
    version_start,
)
from bench.freshness import (
    change_class,
    expected_age,
    expected_freshness,
    measure,
    optimal_intervals,
    page_integrals,
    revisits,
)

ROOT = Path(__file__).resolve().parents[2]

# A page that changes at 10 s and 30 s (versions 1, 2, 3), synced at 5 s (v1),
# 20 s (v2) and 40 s (v3).
CHANGES = (10.0, 30.0)
SYNCS = ((5.0, 1), (20.0, 2), (40.0, 3))


@pytest.mark.parametrize(
    ("offset", "version"),
    [(0.0, 1), (9.99, 1), (10.0, 2), (29.0, 2), (30.0, 3), (1e6, 3)],
)
def test_version_at_counts_changes_at_or_before_the_offset(offset, version):
    assert version_at(CHANGES, offset) == version


def test_version_start_is_the_change_that_began_it():
    assert version_start(CHANGES, 2) == 10.0
    assert version_start(CHANGES, 3) == 30.0
    assert version_start(CHANGES, 1) < 0


def test_page_schedule_is_replayed_from_the_seed():
    first = page_schedule(7, 1, 3, 3600.0)
    assert page_schedule(7, 1, 3, 3600.0) == first
    assert list(first.changes) == sorted(first.changes)
    assert all(0 < t <= 3600.0 for t in first.changes)
    never = [page_schedule(7, 0, j, 3600.0) for j in range(1, 200)]
    assert all(p.changes == () for p in never if p.rate == 0)
    assert any(p.rate == 0 for p in never)
    assert any(p.rate > 0 for p in never)
    assert all(2000 <= p.size <= 5000 for p in never)


# Over [0, 50]: no copy on [0, 5) (age 0..5: 12.5), fresh [5, 10), stale [10, 20)
# (age 0..10: 50), fresh [20, 30), stale [30, 40) (50), fresh [40, 50).
# Over [8, 35]: fresh [8, 10) and [20, 30); stale [10, 20) (50) and [30, 35) (12.5).
@pytest.mark.parametrize(
    ("start", "end", "fresh", "age"),
    [(0.0, 50.0, 25.0, 112.5), (8.0, 35.0, 12.0, 62.5), (41.0, 45.0, 4.0, 0.0)],
)
def test_page_integrals_by_hand(start, end, fresh, age):
    assert page_integrals(CHANGES, SYNCS, start, end) == pytest.approx((fresh, age))


def test_a_page_never_synced_is_stale_and_ages_from_the_start():
    assert page_integrals((), (), 10.0, 20.0) == pytest.approx((0.0, 150.0))


ANSWERS = (
    (5.0, 200, 1),
    (8.0, 304, 1),  # unchanged, 304
    (12.0, 200, 2),  # changed
    (15.0, 200, 2),  # unchanged, 200
    (20.0, 304, 2),  # unchanged, 304
    (25.0, 404, None),  # no answer about the page
    (31.0, 200, 3),  # changed
)


@pytest.mark.parametrize(
    ("start", "counts"), [(0.0, (3, 2)), (10.0, (2, 1)), (21.0, (0, 0))]
)
def test_revisits_of_unchanged_pages_and_their_304s(start, counts):
    assert revisits(ANSWERS, start, 100.0) == counts


def test_measure_a_small_log_by_hand():
    t0 = 1000.0
    schedule = {
        (0, 1): PageSchedule(0.05, CHANGES, 3000),
        (0, 2): PageSchedule(0.0, (), 2000),
    }
    log = [
        (1.0, "/", 200, 1, 300),
        (2.0, "/robots.txt", 404, None, 90),
        (5.0, "/p/1.html", 200, 1, 3000),
        (6.0, "/p/2.html", 200, 1, 2000),
        (20.0, "/p/1.html", 200, 2, 3000),
        (21.0, "/p/2.html", 304, 1, 100),
        (40.0, "/p/1.html", 200, 3, 3000),
        (41.0, "/", 304, 1, 100),
        (60.0, "/p/2.html", 304, 1, 100),  # after the window
    ]
    rows = [
        {"t": t0 + t, "host": 0, "path": p, "status": s, "version": v, "bytes": b}
        for t, p, s, v, b in log
    ]
    result = measure(schedule, t0, rows, (0.0, 50.0))
    # Page 1 as in test_page_integrals_by_hand: 25 s fresh, age 112.5. Page 2: no copy
    # on [0, 6) (age 18), then fresh for 44 s.
    assert result["freshness"] == pytest.approx((25 + 44) / 100)
    assert result["mean_age"] == pytest.approx((112.5 + 18) / 100)
    assert result["fetches"] == 7
    assert result["bytes"] == 300 + 90 + 3000 + 2000 + 3000 + 100 + 3000 + 100
    assert (result["unchanged_revisits"], result["not_modified"]) == (2, 2)
    assert result["share_304"] == 1.0


def test_expected_freshness_and_age_by_hand():
    # rate 0.1, interval 10: F = 1 - e^-1; A = 5 - 10 + (1 - e^-1) / (0.01 x 10).
    assert expected_freshness(0.1, 10.0) == pytest.approx(1 - math.exp(-1))
    assert expected_age(0.1, 10.0) == pytest.approx(-5 + 10 * (1 - math.exp(-1)))
    assert expected_freshness(0.0, 10.0) == 1.0


def _freshness(rate: float, frequency: float) -> float:
    """Cho and Garcia-Molina's F(rate, f), written out again for the brute force."""
    if frequency <= 0:
        return 0.0
    return frequency / rate * (1 - math.exp(-rate / frequency))


def _brute_force(
    rates: tuple[float, ...], budget: float, steps: int
) -> tuple[float, list[float]]:
    """The best split of *budget* over a grid of *steps* parts, and its freshness."""
    best, split = -1.0, [0.0] * len(rates)
    for parts in itertools.product(range(steps + 1), repeat=len(rates) - 1):
        if sum(parts) > steps:
            continue
        shares = [*parts, steps - sum(parts)]
        frequencies = [budget * s / steps for s in shares]
        total = sum(_freshness(r, f) for r, f in zip(rates, frequencies, strict=True))
        if total > best:
            best, split = total, frequencies
    return best, split


@pytest.mark.parametrize(
    ("rates", "budget"),
    [
        ((1 / 10, 1 / 60), 0.1),
        ((1 / 10, 1 / 60, 1 / 600), 0.2),
        ((1.0, 1 / 100, 1 / 1000), 0.02),  # the fast page is not worth a fetch
    ],
)
def test_optimal_intervals_match_a_brute_force_search(rates, budget):
    steps = 400 if len(rates) == 2 else 200
    best, split = _brute_force(rates, budget, steps)
    intervals = optimal_intervals(rates, budget)
    frequencies = [0.0 if t is None else 1 / t for t in intervals]
    assert sum(frequencies) == pytest.approx(budget)
    solved = sum(_freshness(r, f) for r, f in zip(rates, frequencies, strict=True))
    assert solved >= best - 1e-9
    assert solved - best < 1e-3
    for found, grid in zip(frequencies, split, strict=True):
        assert found == pytest.approx(grid, abs=2 * budget / steps)


def test_optimum_skips_a_page_that_changes_too_fast():
    intervals = optimal_intervals((1.0, 1 / 100, 1 / 1000), 0.02)
    assert intervals[0] is None
    assert intervals[1] is not None
    assert intervals[2] is not None


def test_never_changing_pages_get_no_fetches():
    assert optimal_intervals((0.0, 0.0), 1.0) == [None, None]


@pytest.mark.parametrize(
    ("rate", "label"),
    [(0.0, "never"), (1 / 5, "< 8 s"), (1 / 8, "8-30 s"), (1 / 3000, ">= 20 min")],
)
def test_change_class_by_mean_time_between_changes(rate, label):
    assert change_class(rate) == label


def test_not_modified_follows_rfc_9110():
    etag, modified = '"v3"', 1_700_000_000.7
    same_second = "Tue, 14 Nov 2023 22:13:20 GMT"  # 1_700_000_000
    earlier = "Tue, 14 Nov 2023 22:13:19 GMT"
    assert not_modified({"if-none-match": '"v3"'}, etag, modified)
    assert not_modified({"if-none-match": 'W/"v3", "v9"'}, etag, modified)
    assert not_modified({"if-none-match": "*"}, etag, modified)
    # If-None-Match decides alone, even when If-Modified-Since would match.
    assert not not_modified(
        {"if-none-match": '"v2"', "if-modified-since": same_second}, etag, modified
    )
    assert not_modified({"if-modified-since": same_second}, etag, modified)
    assert not not_modified({"if-modified-since": earlier}, etag, modified)
    assert not not_modified({"if-modified-since": "garbage"}, etag, modified)
    assert not not_modified({"if-none-match": '"v3"'}, None, None)
    assert not not_modified({}, etag, modified)


def test_the_site_answers_a_conditional_get_with_304(tmp_path):
    log = tmp_path / "site.jsonl"
    # The schedule starts in an hour: every page is at version 1 until then.
    argv = [sys.executable, "-m", "bench.changingsite", "--hosts", "1", "--pages",
            "3", "--seed", "1", "--log", str(log), "--start",
            str(time.time() + 3600)]  # fmt: skip
    site = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert site.stdout is not None
        info = json.loads(site.stdout.readline())
        connection = http.client.HTTPConnection(info["host_names"][0], timeout=5)
        connection.request("GET", "/p/2.html")
        first = connection.getresponse()
        body = first.read().decode()
        etag = first.getheader("ETag")
        assert first.status == 200
        assert 2000 <= len(body) <= 5000
        assert etag == '"v1"'
        assert '<p class="version">version 1</p>' in body
        assert first.getheader("Last-Modified")
        connection.request("GET", "/p/2.html", headers={"If-None-Match": etag})
        second = connection.getresponse()
        assert (second.status, second.read()) == (304, b"")
        connection.close()
    finally:
        site.terminate()
        site.wait(5)
        if site.stdout is not None:
            site.stdout.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["event"] == "start"
    assert [(r["path"], r["status"]) for r in lines[1:]] == [
        ("/p/2.html", 200),
        ("/p/2.html", 304),
    ]
    assert lines[1]["version"] == lines[2]["version"] == 1
