"""crawler/render/levels.py and adaptive.py: decision keys, records read from Redis,
the rules."""

from __future__ import annotations

import string
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.defaults import default_settings
from crawler.policy.hosts import BadURLError
from crawler.render.adaptive import (
    MAX_PATTERNS,
    after_outcome,
    decide,
    may_claim,
    parked_fate,
    recheck_due,
    sample_pays,
    text_gain,
    undecided,
    verdict,
)
from crawler.render.config import RenderConfig
from crawler.render.levels import (
    HOST,
    MAX_PATTERN_LENGTH,
    DecisionKey,
    HostRecord,
    LevelRecord,
    key_of,
    pattern_of,
    read_host,
    write_level,
)
from tests.unit.properties import PROPERTY

CLAIM_LIFE = 300.0
NOW = 1_000_000.0


def config(**overrides: object) -> RenderConfig:
    values = {**default_settings(), "RENDER_MODE": "auto", **overrides}
    return RenderConfig.from_settings(Settings(values))


# --- keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host", "pattern"),
    [
        ("http://Example.COM/app/x/y.html", "example.com:80", "/app/"),
        ("http://example.com/index.html", "example.com:80", "/"),
        ("http://example.com", "example.com:80", "/"),
        ("http://example.com/", "example.com:80", "/"),
        ("https://example.com/app", "example.com:443", "/"),
        ("https://example.com/app/", "example.com:443", "/app/"),
        ("http://127.0.0.24:8080/a/b?q=/c/d#/e/", "127.0.0.24:8080", "/a/"),
        ("http://[::1]:81/x/y", "[::1]:81", "/x/"),
        ("http://example.com//double/x", "example.com:80", "//"),
        ("http://example.com/a%20b/c", "example.com:80", "/a%20b/"),
    ],
)
def test_key_is_host_and_port_then_first_directory(url, host, pattern):
    assert key_of(url) == DecisionKey(host, pattern)


@pytest.mark.parametrize(
    "url", ["", "no-scheme", "http:///path/x", "http://host:99999/", "data:text/html,x"]
)
def test_url_without_usable_host_has_no_key(url):
    with pytest.raises(BadURLError):
        key_of(url)


def test_hostile_directory_is_cut_and_quoted():
    pattern = pattern_of("/" + "é\x00 \n" * 200 + "/x")
    assert len(pattern) <= MAX_PATTERN_LENGTH
    assert pattern.startswith("/%C3%A9%00%20%0A")


PRINTABLE = frozenset(string.ascii_letters + string.digits + string.punctuation)


@PROPERTY
@given(url=st.text(max_size=300))
def test_any_text_gives_a_key_or_bad_url(url):
    try:
        key = key_of(url)
    except BadURLError:
        return
    assert key.host.rsplit(":", 1)[1].isdigit()
    check_pattern(key.pattern)


@PROPERTY
@given(
    scheme=st.sampled_from(["http://", "https://", "HTTP://"]),
    host=st.sampled_from(["a.example", "127.0.0.2", "[::1]", "x.test:8080"]),
    path=st.text(max_size=400),
)
def test_hostile_paths_give_bounded_printable_patterns(scheme, host, path):
    key = key_of(f"{scheme}{host}/{path}")
    check_pattern(key.pattern)
    assert key.pattern == pattern_of(key.pattern)  # a pattern is its own pattern


def check_pattern(pattern: str) -> None:
    assert pattern.startswith("/")
    assert pattern.endswith("/")
    assert len(pattern) <= MAX_PATTERN_LENGTH
    assert set(pattern) <= PRINTABLE


# --- records read from Redis -------------------------------------------------------


def test_record_reads_back_what_the_crawler_writes():
    written = LevelRecord(
        claimed=3,
        claimed_at=12.5,
        paid=2,
        static=1,
        links=14,
        decision="render",
        decided_at=99.25,
        decided_paid=2,
        decided_static=1,
    )
    fields = {**write_level(written, HOST), **write_level(LevelRecord(paid=1), "/a/")}
    record, bad = read_host({k.encode(): v.encode() for k, v in fields.items()})
    assert bad == 0
    assert record.level(HOST) == written
    assert record.level("/a/") == LevelRecord(paid=1)
    assert record.patterns == 1


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (b"decision:", b"eval('x')"),
        (b"paid:", b"-1"),
        (b"paid:", b"1e9"),
        (b"paid:", b"9" * 40),
        (b"claimed_at:", b"nan"),
        (b"claimed_at:", b"inf"),
        (b"decided_at:", b"-5"),
        (b"unknown:", b"1"),
        (b"paid:not-a-pattern", b"1"),
        (b"paid:/a/b/", b"1"),
        (b"\xff\xfe:", b"1"),
        (b"paid:", b"\xff"),
        (b"paid", b"\x80\x04\x95pickle"),
    ],
)
def test_hostile_fields_are_counted_and_ignored(name, value):
    record, bad = read_host({name: value, b"static:": b"2"})
    assert bad == 1
    assert record.level(HOST) == LevelRecord(static=2)


@PROPERTY
@given(st.dictionaries(st.binary(max_size=30), st.binary(max_size=30), max_size=10))
def test_any_hash_reads_without_raising(hash_fields):
    record, bad = read_host(hash_fields)
    assert 0 <= bad <= len(hash_fields)
    assert sum(1 for _ in record.levels) <= len(hash_fields)


# --- verdicts ----------------------------------------------------------------------


def host(**levels: LevelRecord) -> HostRecord:
    return HostRecord({("" if k == "host" else f"/{k}/"): v for k, v in levels.items()})


RENDER = LevelRecord(paid=3, decision="render", decided_at=NOW - 10, decided_paid=3)
STATIC = LevelRecord(static=3, decision="static", decided_at=NOW - 10, decided_static=3)
MIXED = LevelRecord(paid=1, static=2, decision="mixed", decided_at=NOW - 10)


@pytest.mark.parametrize(
    ("record", "pattern", "expected"),
    [
        (HostRecord(), "/", "sample"),  # nothing known: take a sample
        (host(host=LevelRecord(claimed=2)), "/", "sample"),
        (host(host=LevelRecord(claimed=3, claimed_at=NOW)), "/", "static"),
        # claims with no outcome for CLAIM_LIFE are given again
        (host(host=LevelRecord(claimed=3, claimed_at=NOW - CLAIM_LIFE)), "/", "sample"),
        # ...but not once every outcome is in (the outcome decides then)
        (
            host(host=LevelRecord(claimed=3, paid=3, claimed_at=NOW - 1e6)),
            "/",
            "static",
        ),
        (host(host=RENDER), "/x/", "render"),
        (host(host=STATIC), "/x/", "static"),
        (host(host=MIXED, x=RENDER, y=STATIC), "/x/", "render"),
        (host(host=MIXED, x=RENDER, y=STATIC), "/y/", "static"),
        (host(host=MIXED, x=RENDER), "/new/", "sample"),
        (host(host=MIXED, x=LevelRecord(claimed=3, claimed_at=NOW)), "/x/", "static"),
    ],
)
def test_verdict(record, pattern, expected):
    assert (
        verdict(
            record,
            pattern,
            now=NOW,
            config=config(RENDER_SAMPLE_PAGES=3),
            claim_seconds=CLAIM_LIFE,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("paid", "expected"), [(MAX_PATTERNS, "render"), (1, "static")]
)
def test_a_trap_host_past_max_patterns_follows_its_majority(paid, expected):
    patterns = {f"/p{i}/": RENDER for i in range(MAX_PATTERNS)}
    mixed = LevelRecord(
        paid=paid, static=MAX_PATTERNS - paid, decision="mixed", decided_at=NOW
    )
    record = HostRecord({HOST: mixed, **patterns})
    answer = verdict(
        record, "/another/", now=NOW, config=config(), claim_seconds=CLAIM_LIFE
    )
    assert answer == expected


@pytest.mark.parametrize(
    ("decided_at", "interval", "due"),
    [(NOW - 3600, 3600.0, True), (NOW - 3599, 3600.0, False), (0.0, 0.0, False)],
)
def test_recheck_due(decided_at, interval, due):
    assert recheck_due(decided_at, NOW, interval) is due
    record = host(host=replace(RENDER, decided_at=decided_at))
    answer = verdict(
        record,
        "/",
        now=NOW,
        config=config(RENDER_RECHECK_INTERVAL=interval),
        claim_seconds=CLAIM_LIFE,
    )
    assert answer == ("sample" if due else "render")


@pytest.mark.parametrize(
    ("record", "free"),
    [
        (LevelRecord(), True),
        (LevelRecord(claimed=2, paid=2), True),
        (LevelRecord(claimed=0, paid=3), False),  # outcomes count as claims
        (LevelRecord(claimed=3, paid=1, claimed_at=NOW - 299), False),
        (LevelRecord(claimed=3, paid=1, claimed_at=NOW - 300), True),
    ],
)
def test_may_claim(record, free):
    assert may_claim(record, now=NOW, pages=3, life=CLAIM_LIFE) is free


# --- outcomes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("links", "text", "min_links", "min_text", "pays"),
    [
        (1, 0.0, 1, 0.2, True),
        (0, 0.2, 1, 0.2, True),
        (0, 0.19, 1, 0.2, False),
        (4, 0.0, 5, 0.2, False),
        (100, 0.0, 0, 0.2, False),  # a threshold of 0 is off
        (0, 100.0, 1, 0.0, False),
        (0, 0.0, 0, 0.0, False),
    ],
)
def test_sample_pays(links, text, min_links, min_text, pays):
    rules = config(RENDER_MIN_GAINED_LINKS=min_links, RENDER_MIN_GAINED_TEXT=min_text)
    assert sample_pays(rules, gained_links=links, gained_text=text) is pays


@pytest.mark.parametrize(
    ("static", "rendered", "gain"),
    [
        (1000, 1200, 0.2),
        (1000, 1000, 0.0),
        (1000, 500, -0.5),
        (100, 200, 0.2),  # a small page: counted against 500 characters
        (0, 60, 0.12),
        (0, 500, 1.0),
        (0, 0, 0.0),
    ],
)
def test_text_gain(static, rendered, gain):
    assert text_gain(static, rendered) == pytest.approx(gain)


@pytest.mark.parametrize(
    ("paid", "static", "level", "decision"),
    [
        (3, 0, HOST, "render"),
        (0, 3, HOST, "static"),
        (1, 2, HOST, "mixed"),
        (2, 1, "/app/", "render"),  # a pattern is the finest level: render
        (0, 3, "/app/", "static"),
    ],
)
def test_decide(paid, static, level, decision):
    assert decide(paid, static, level=level) == decision


def test_the_last_sample_decides_with_the_outcomes_it_saw():
    change = after_outcome(
        LevelRecord(claimed=3, paid=2, static=1, links=7), level=HOST, now=NOW, pages=3
    )
    assert change is not None
    kind, record = change
    assert kind == "decided"
    assert record.decision == "mixed"
    assert (record.decided_at, record.decided_paid, record.decided_static) == (
        NOW,
        2,
        1,
    )
    assert record.links == 7


def test_samples_short_of_the_count_decide_nothing():
    assert after_outcome(LevelRecord(paid=2), level=HOST, now=NOW, pages=3) is None


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        # a re-check that agrees: the decision stands
        (replace(RENDER, paid=4), None),
        (replace(STATIC, static=4), None),
        # one that disagrees: the level is sampled afresh
        (replace(RENDER, static=1), "reset"),
        (replace(STATIC, paid=1), "reset"),
        # a mixed host stays mixed: its patterns are re-checked instead
        (replace(MIXED, paid=5), None),
    ],
)
def test_a_recheck_keeps_or_resets_a_decision(record, expected):
    change = after_outcome(record, level=HOST, now=NOW, pages=3)
    if expected is None:
        assert change is None
    else:
        assert change == ("reset", LevelRecord())


# --- pages parked while undecided ----------------------------------------------------


@pytest.mark.parametrize(
    ("record", "pattern", "waits"),
    [
        (HostRecord(), "/", True),
        (host(host=LevelRecord(claimed=3)), "/x/", True),
        (host(host=RENDER), "/x/", False),
        (host(host=MIXED, x=STATIC), "/x/", False),
        (host(host=MIXED, x=LevelRecord(paid=1)), "/x/", True),
        (host(host=MIXED), "/new/", True),
    ],
)
def test_undecided(record, pattern, waits):
    assert undecided(record, pattern) is waits


def test_a_trap_hosts_extra_patterns_wait_for_nothing():
    patterns = {f"/p{i}/": RENDER for i in range(MAX_PATTERNS)}
    record = HostRecord({HOST: MIXED, **patterns})
    assert undecided(record, "/another/") is False


@pytest.mark.parametrize(
    ("record", "render", "static"),
    [
        (HostRecord(), [], []),
        (host(host=RENDER, x=STATIC), [HOST], []),
        (host(host=STATIC, x=RENDER), [], [HOST]),
        (host(host=MIXED, x=RENDER, y=STATIC, z=LevelRecord(paid=1)), ["/x/"], ["/y/"]),
    ],
)
def test_parked_fate(record, render, static):
    assert parked_fate(record) == (render, static)
