"""What one visit makes of a URL's entry in the URL library (crawler.records.visits)."""

from __future__ import annotations

import pytest

from crawler.policy.revisitconfig import Bounds, RevisitConfig
from crawler.records.visits import Visit, after_visit

BOUNDS = Bounds(interval=100.0, min_interval=10.0, max_interval=1000.0)


def config(
    policy: str = "uniform", gone_after: int = 2, change_threshold: int = 3
) -> RevisitConfig:
    return RevisitConfig(
        policy=policy,
        bounds=BOUNDS,
        overrides=(),
        gone_after=gone_after,
        feed_interval=1.0,
        feed_batch=10,
        claim_timeout=60.0,
        conditional=True,
        change_threshold=change_threshold,
    )


def visit(status: int = 200, body_hash: str | None = "h1", **fields: object) -> Visit:
    values: dict[str, object] = {
        "url": "http://127.0.0.2/a",
        "host": "127.0.0.2",
        "depth": 3,
        "status": status,
        "fate": "fetched" if status < 300 or status == 304 else "http_error",
        "content_hash": body_hash,
        "etag": '"e1"',
        "last_modified": "Mon, 01 Jan 2026 00:00:00 GMT",
    }
    values.update(fields)
    return Visit(**values)  # type: ignore[arg-type]


def test_a_first_visit_schedules_the_next_at_the_interval() -> None:
    entry, outcome = after_visit(None, visit(), 1000.0, config(), None)
    assert outcome == "first"
    assert entry.state == "active"
    assert entry.next_visit == 1100.0
    assert (entry.visits, entry.checks, entry.changes, entry.failures) == (1, 0, 0, 0)
    assert (entry.content_hash, entry.etag) == ("h1", '"e1"')


@pytest.mark.parametrize(
    "first", [visit(404, None), visit(301, None, fate="redirected"), visit(0, None)]
)
def test_a_url_whose_first_visit_found_no_page_is_never_revisited(first) -> None:
    entry, outcome = after_visit(None, first, 1000.0, config(), None)
    assert outcome == "once"
    assert entry.state == "once"
    assert entry.next_visit is None


def test_a_304_keeps_the_stored_version_and_counts_as_unchanged() -> None:
    first, _ = after_visit(None, visit(), 1000.0, config(), None)
    entry, outcome = after_visit(
        first, visit(304, None, etag=None), 1150.0, config(), None
    )
    assert outcome == "not_modified"
    assert entry.content_hash == "h1"  # the 304 had no body
    assert entry.etag == '"e1"'  # nor a new validator
    assert (entry.checks, entry.changes, entry.observed) == (1, 0, 150.0)
    assert entry.last_change is None
    assert entry.next_visit == 1200.0  # one interval after it was due (1100)


def test_a_new_body_is_a_change() -> None:
    first, _ = after_visit(None, visit(), 1000.0, config(), None)
    entry, outcome = after_visit(first, visit(body_hash="h2"), 1100.0, config(), None)
    assert outcome == "changed"
    assert entry.content_hash == "h2"
    assert entry.last_change == 1100.0
    assert (entry.checks, entry.changes, entry.observed) == (1, 1, 100.0)
    same, outcome = after_visit(entry, visit(body_hash="h2"), 1200.0, config(), None)
    assert outcome == "unchanged"
    assert (same.checks, same.changes, same.observed) == (2, 1, 200.0)


@pytest.mark.parametrize(
    ("visited_at", "next_visit"),
    [
        (1100.0, 1200.0),  # on time
        (1190.0, 1200.0),  # late, within the interval: the cycle holds
        (1250.0, 1350.0),  # more than an interval late: the cycle starts again
        (1050.0, 1150.0),  # early (fetched again for another reason): from then
    ],
)
def test_the_next_visit_is_one_interval_after_the_last_was_due(
    visited_at: float, next_visit: float
) -> None:
    first, _ = after_visit(None, visit(), 1000.0, config(), None)
    assert first.next_visit == 1100.0
    entry, _ = after_visit(first, visit(), visited_at, config(), None)
    assert entry.next_visit == next_visit


def test_halving_halves_on_a_change_and_doubles_otherwise() -> None:
    first, _ = after_visit(None, visit(), 0.0, config("halving"), None)
    changed, _ = after_visit(
        first, visit(body_hash="h2"), 100.0, config("halving"), None
    )
    assert changed.revisit_interval == 50.0
    unchanged, _ = after_visit(
        changed, visit(body_hash="h2"), 150.0, config("halving"), None
    )
    assert unchanged.revisit_interval == 100.0
    assert unchanged.next_visit == 250.0


def test_failures_in_a_row_make_a_page_gone() -> None:
    first, _ = after_visit(None, visit(), 0.0, config(gone_after=2), None)
    failed, outcome = after_visit(first, visit(404, None), 100.0, config(), None)
    assert outcome == "failed"
    assert failed.state == "active"
    assert failed.next_visit == 200.0  # tried again after the same interval
    assert failed.content_hash == "h1"  # the stored version is still the last seen
    back, _ = after_visit(failed, visit(), 200.0, config(), None)
    assert back.failures == 0  # an answer ends the run of failures
    assert back.observed == 200.0  # the check covers the time since the body was seen
    once, _ = after_visit(back, visit(410, None), 300.0, config(), None)
    gone, outcome = after_visit(
        once, visit(0, None, fate="network_error"), 400.0, config(), None
    )
    assert outcome == "gone"
    assert gone.state == "gone"
    assert gone.next_visit is None


def test_a_gone_page_that_answers_again_is_revisited_with_its_history() -> None:
    first, _ = after_visit(None, visit(), 0.0, config(gone_after=1), None)
    changed, _ = after_visit(
        first, visit(body_hash="h2"), 100.0, config(gone_after=1), None
    )
    gone, _ = after_visit(changed, visit(404, None), 200.0, config(gone_after=1), None)
    assert gone.state == "gone"
    back, outcome = after_visit(gone, visit(body_hash="h3"), 900.0, config(), None)
    assert outcome == "first"
    assert back.state == "active"
    assert (back.checks, back.changes) == (1, 1)  # the history it had
    assert back.first_visit == 0.0


# Text fingerprints (16 hex digits) and their distances from TEXT.
TEXT = "00000000000000ff"
TWO_BITS_OFF = "00000000000000fc"  # 2 bits from TEXT: a ticking clock
FOUR_BITS_OFF = "00000000000000f0"  # 4 bits from TEXT
FAR = "ffffffff00000000"


def test_a_body_whose_text_moved_little_is_no_change() -> None:
    first, _ = after_visit(None, visit(text_hash=TEXT), 1000.0, config(), None)
    entry, outcome = after_visit(
        first, visit(body_hash="h2", text_hash=TWO_BITS_OFF), 1100.0, config(), None
    )
    assert outcome == "small_change"
    assert (entry.checks, entry.changes) == (1, 0)
    assert entry.last_change is None
    assert entry.content_hash == "h2"  # the stored version is the one fetched
    assert entry.text_hash == TEXT  # what a change is measured from stays


def test_small_changes_that_add_up_count_once_they_are_one() -> None:
    first, _ = after_visit(None, visit(text_hash=TEXT), 1000.0, config(), None)
    second, _ = after_visit(
        first, visit(body_hash="h2", text_hash=TWO_BITS_OFF), 1100.0, config(), None
    )
    third, outcome = after_visit(
        second, visit(body_hash="h3", text_hash=FOUR_BITS_OFF), 1200.0, config(), None
    )
    assert outcome == "changed"  # 4 bits from the last counted version
    assert third.text_hash == FOUR_BITS_OFF
    assert (third.checks, third.changes) == (2, 1)


@pytest.mark.parametrize(
    ("threshold", "text", "expected"),
    [
        (0, TWO_BITS_OFF, "changed"),  # every byte change counts
        (3, FAR, "changed"),
        (3, None, "changed"),  # no text to compare: the body decides
        (3, "not a simhash", "changed"),  # a value this crawler did not write
    ],
)
def test_a_change_counts_without_a_small_text_move(threshold, text, expected) -> None:
    first, _ = after_visit(None, visit(text_hash=TEXT), 1000.0, config(), None)
    _, outcome = after_visit(
        first,
        visit(body_hash="h2", text_hash=text),
        1100.0,
        config(change_threshold=threshold),
        None,
    )
    assert outcome == expected


def test_a_page_whose_only_change_is_noise_drifts_to_the_ceiling() -> None:
    """Halving doubles the interval of an unchanged page: a clock that ticks on
    every visit no longer keeps it at the floor."""
    entry, _ = after_visit(None, visit(text_hash=TEXT), 0.0, config("halving"), None)
    now = 0.0
    for step in range(12):
        now += entry.revisit_interval
        clock = TWO_BITS_OFF if step % 2 else TEXT
        entry, outcome = after_visit(
            entry,
            visit(body_hash=f"h{step}", text_hash=clock),
            now,
            config("halving"),
            None,
        )
        assert outcome == "small_change"
    assert entry.revisit_interval == BOUNDS.max_interval


def test_adaptive_takes_the_host_s_factor_to_the_next_visit() -> None:
    """An unchanged revisit of a lazy host's page (factor 4) is due later than the
    same revisit on a neutral host, the interval going toward 4x its own target."""
    adaptive = config("adaptive")
    first, _ = after_visit(None, visit(), 0.0, adaptive, None)
    entries = [
        after_visit(first, visit(), 100.0, adaptive, 1.0, site_factor=factor)[0]
        for factor in (1.0, 4.0)
    ]
    neutral, lazy = entries
    assert lazy.revisit_interval > neutral.revisit_interval
    assert lazy.next_visit is not None
    assert neutral.next_visit is not None
    assert lazy.next_visit - neutral.next_visit == pytest.approx(
        lazy.revisit_interval - neutral.revisit_interval
    )
