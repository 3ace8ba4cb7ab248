"""Unit tests for crawler/policy/robotsfetch.py: RFC 9309 decisions and the shared record."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.policy.robotsfetch import (
    DAY,
    MAX_BYTES,
    BadRecordError,
    Fetch,
    RobotsConfig,
    RobotsRecord,
    origin_of,
    outcome_of_status,
    record_after,
    redirect_target,
    retention,
    robots_url,
)
from crawler.policy.robotsrules import (
    MAX_SITEMAPS,
    RobotsRules,
    parse_rules,
    robots_text,
)
from tests.unit.properties import PROPERTY

CONFIG = RobotsConfig(
    user_agent="crawler",
    cache_ttl=86400.0,
    error_retry_delay=600.0,
    give_up_after=30 * DAY,
    fetch_timeout=30.0,
    contact="https://example.com/crawler-contact",
)
NOW = 1_700_000_000.0
BASE = "http://example.com/robots.txt"


def project_settings(**overrides: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.setmodule("crawler.settings")
    settings.update(overrides)
    return settings


# --- configuration --------------------------------------------------------------------


def test_config_reads_the_project_defaults() -> None:
    config = RobotsConfig.from_settings(project_settings())
    assert config == RobotsConfig(
        "crawler",
        86400.0,
        600.0,
        30 * DAY,
        30.0,
        "https://example.com/crawler-contact",
    )
    assert config.fetch_budget == 6 * 30.0


def test_config_reads_the_fetch_timeout() -> None:
    settings = project_settings(ROBOTS_FETCH_TIMEOUT="2.5")
    assert RobotsConfig.from_settings(settings).fetch_timeout == 2.5


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ROBOTS_CACHE_TTL", 0, "ROBOTS_CACHE_TTL must be > 0 seconds, got 0.0"),
        ("ROBOTS_CACHE_TTL", "soon", "ROBOTS_CACHE_TTL must be a number, got 'soon'"),
        ("ROBOTS_CACHE_TTL", "nan", "ROBOTS_CACHE_TTL must be a finite number"),
        ("ROBOTS_ERROR_RETRY_DELAY", -1, "ROBOTS_ERROR_RETRY_DELAY must be > 0"),
        ("ROBOTS_ERROR_GIVE_UP_DAYS", -2, "ROBOTS_ERROR_GIVE_UP_DAYS must be >= 0"),
        ("ROBOTS_FETCH_TIMEOUT", 0, "ROBOTS_FETCH_TIMEOUT must be > 0"),
        (
            "ROBOTSTXT_USER_AGENT",
            "my bot",
            "ROBOTSTXT_USER_AGENT must be the crawler's",
        ),
        ("BOT_NAME", "my bot", "while ROBOTSTXT_USER_AGENT is unset) must be"),
        ("ROBOTSTXT_USER_AGENT", "Mozilla/5.0 (X11)", "got 'Mozilla/5.0 (X11)'"),
    ],
)
def test_a_bad_setting_is_named_in_one_line(
    name: str, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match="^" + name) as info:
        RobotsConfig.from_settings(project_settings(**{name: value}))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_give_up_days_may_be_zero() -> None:
    settings = project_settings(ROBOTS_ERROR_GIVE_UP_DAYS=0)
    assert RobotsConfig.from_settings(settings).give_up_after == 0


# --- origins, statuses, redirects -----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Example.COM/a?b#c", "http://example.com:80"),
        ("https://example.com", "https://example.com:443"),
        ("HTTP://example.com:8080/x", "http://example.com:8080"),
        ("http://127.0.0.2:40123/p/1.html", "http://127.0.0.2:40123"),
        ("http://[::1]:81/", "http://[::1]:81"),
        ("http://user:pw@example.com/", "http://example.com:80"),
    ],
)
def test_origin_is_scheme_host_and_port(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "mailto:a@example.com",
        "http:///path",
        "http://a:x/",
        "http://[::1/",
    ],
)
def test_only_http_urls_with_a_host_have_an_origin(url: str) -> None:
    with pytest.raises(ValueError, match=r"^no http"):
        origin_of(url)


@pytest.mark.parametrize(
    ("origin", "url"),
    [
        ("http://example.com:80", "http://example.com/robots.txt"),
        ("https://example.com:443", "https://example.com/robots.txt"),
        ("https://example.com:80", "https://example.com:80/robots.txt"),
        ("http://[::1]:81", "http://[::1]:81/robots.txt"),
    ],
)
def test_robots_url_leaves_out_a_default_port(origin: str, url: str) -> None:
    assert robots_url(origin) == url


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "parse"),
        (204, "parse"),
        (299, "parse"),
        (301, "redirect"),
        (302, "redirect"),
        (303, "redirect"),
        (307, "redirect"),
        (308, "redirect"),
        (300, "unavailable"),
        (304, "unavailable"),
        (400, "unavailable"),
        (401, "unavailable"),
        (403, "unavailable"),
        (404, "unavailable"),
        (410, "unavailable"),
        (429, "unreachable"),  # "slow down" is no licence to crawl everything
        (500, "unreachable"),
        (503, "unreachable"),
        (599, "unreachable"),
        (100, "unreachable"),
        (999, "unreachable"),
    ],
)
def test_what_a_status_means(status: int, outcome: str) -> None:
    assert outcome_of_status(status) == outcome


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("/robots-1.txt", "http://example.com/robots-1.txt"),
        ("  https://www.example.com/robots.txt ", "https://www.example.com/robots.txt"),
        ("//cdn.example.net/r.txt", "http://cdn.example.net/r.txt"),
        ("other.txt", "http://example.com/other.txt"),
        (None, None),
        ("", None),
        ("   ", None),
        ("ftp://example.com/robots.txt", None),
        ("javascript:alert(1)", None),
        ("http://[::1/robots.txt", None),
    ],
)
def test_redirect_target(location: str | None, target: str | None) -> None:
    assert redirect_target(BASE, location) == target


# --- the file's text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "text", "truncated"),
    [
        (b"User-agent: *\nDisallow: /a\n", "User-agent: *\nDisallow: /a\n", False),
        (b"\xef\xbb\xbfUser-agent: *\n", "User-agent: *\n", False),
        (b"Disallow: /caf\xe9\n", "Disallow: /caf\ufffd\n", False),
        (b"", "", False),
        (b"a" * MAX_BYTES, "a" * MAX_BYTES, False),
        (b"a" * (MAX_BYTES + 1), "a" * MAX_BYTES, True),  # no line end: a hard cut
        (
            b"Disallow: /a\n" + b"x" * MAX_BYTES + b"\nDisallow: /\n",
            "Disallow: /a\n",  # the partial last line and everything after go
            True,
        ),
    ],
)
def test_robots_text(body: bytes, text: str, truncated: bool) -> None:
    assert robots_text(body) == (text, truncated)


def test_a_line_cut_at_the_limit_is_dropped_whole() -> None:
    line = b"Disallow: /private-area\n"
    body = b"#" * (MAX_BYTES - 10) + b"\n" + line
    text, truncated = robots_text(body)
    assert truncated
    assert text == "#" * (MAX_BYTES - 10) + "\n"


# --- records: what a fetch leaves -----------------------------------------------------


def fetch(outcome: str, status: int | None = None, text: str = "") -> Fetch:
    return Fetch(outcome, status, text)  # type: ignore[arg-type]


GOOD = RobotsRecord("rules", NOW - DAY - 5, NOW - 5, 200, "Disallow: /a\n")


@pytest.mark.parametrize(
    ("result", "previous", "expected"),
    [
        pytest.param(
            fetch("parse", 200, "Disallow: /b\n"),
            GOOD,
            RobotsRecord("rules", NOW, NOW + DAY, 200, "Disallow: /b\n"),
            id="2xx-rules-for-a-day",
        ),
        pytest.param(
            fetch("unavailable", 404),
            GOOD,
            RobotsRecord("allow", NOW, NOW + DAY, 404),
            id="4xx-allows-all-and-forgets-the-old-file",
        ),
        pytest.param(
            fetch("unreachable", 503),
            None,
            RobotsRecord("deny", NOW, NOW + 600, 503, None, NOW),
            id="first-failure-denies-until-retry",
        ),
        pytest.param(
            fetch("unreachable"),
            GOOD,
            RobotsRecord("deny", NOW, NOW + 600, None, "Disallow: /a\n", NOW),
            id="failure-keeps-the-last-good-copy",
        ),
        pytest.param(
            fetch("unreachable", 500),
            RobotsRecord("deny", NOW - 600, NOW, 503, "Disallow: /a\n", NOW - 5 * DAY),
            RobotsRecord("deny", NOW, NOW + 600, 500, "Disallow: /a\n", NOW - 5 * DAY),
            id="failures-in-a-row-keep-their-start",
        ),
        pytest.param(
            fetch("unreachable", 500),
            RobotsRecord("deny", NOW - 600, NOW, 503, "Disallow: /a\n", NOW - 30 * DAY),
            RobotsRecord(
                "rules", NOW, NOW + 600, 500, "Disallow: /a\n", NOW - 30 * DAY
            ),
            id="after-30-days-the-last-good-copy",
        ),
        pytest.param(
            fetch("unreachable"),
            RobotsRecord("deny", NOW - 600, NOW, None, None, NOW - 31 * DAY),
            RobotsRecord("allow", NOW, NOW + 600, None, None, NOW - 31 * DAY),
            id="after-30-days-without-a-copy-no-restrictions",
        ),
        pytest.param(
            fetch("parse", 200, ""),
            RobotsRecord("deny", NOW - 600, NOW, 503, "Disallow: /a\n", NOW - DAY),
            RobotsRecord("rules", NOW, NOW + DAY, 200, ""),
            id="success-ends-the-failures",
        ),
        pytest.param(
            fetch("unreachable", 503),
            RobotsRecord("allow", NOW - 600, NOW, 404),
            RobotsRecord("deny", NOW, NOW + 600, 503, None, NOW),
            id="no-copy-after-a-404",
        ),
    ],
)
def test_record_after_a_fetch(
    result: Fetch, previous: RobotsRecord | None, expected: RobotsRecord
) -> None:
    assert record_after(CONFIG, result, now=NOW, previous=previous) == expected


def test_a_record_that_gave_up_says_so() -> None:
    failing = RobotsRecord("deny", NOW - 600, NOW, None, None, NOW - 31 * DAY)
    after = record_after(CONFIG, fetch("unreachable"), now=NOW, previous=failing)
    assert after.gave_up
    assert not failing.gave_up
    assert not GOOD.gave_up


def test_give_up_zero_never_denies() -> None:
    config = RobotsConfig("crawler", DAY, 600.0, 0.0, 30.0, CONFIG.contact)
    assert record_after(config, fetch("unreachable"), now=NOW).state == "allow"


def test_a_record_is_fresh_until_it_expires() -> None:
    record = RobotsRecord("allow", NOW, NOW + 10, 404)
    assert record.fresh(NOW + 9.9)
    assert not record.fresh(NOW + 10)


@pytest.mark.parametrize(
    ("record", "seconds"),
    [
        (RobotsRecord("rules", NOW, NOW + DAY, 200, ""), DAY + 30 * DAY),
        (RobotsRecord("deny", NOW, NOW + 600, 503, None, NOW), 600 + 30 * DAY),
        (RobotsRecord("allow", NOW - 99 * DAY, NOW - 98 * DAY, 404), 1),
    ],
)
def test_redis_keeps_a_record_past_its_expiry_for_the_give_up_period(
    record: RobotsRecord, seconds: float
) -> None:
    assert retention(CONFIG, record, now=NOW) == seconds


# --- records: the JSON every node reads -----------------------------------------------

times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
records = st.builds(
    lambda state, fetched, ttl, status, body, since: RobotsRecord(
        state,
        fetched,
        fetched + ttl,
        status,
        body if body is not None or state != "rules" else "",
        since,
    ),
    st.sampled_from(["rules", "allow", "deny"]),
    times,
    st.floats(min_value=0, max_value=1e7, allow_nan=False),
    st.none() | st.integers(100, 999),
    st.none() | st.text(max_size=200),
    st.none() | times,
)


@PROPERTY
@given(records)
def test_a_record_survives_json(record: RobotsRecord) -> None:
    assert RobotsRecord.from_json(record.to_json()) == record
    assert RobotsRecord.from_json(record.to_json().encode()) == record


def good_json(**changes: object) -> str:
    value = json.loads(GOOD.to_json())
    value.update(changes)
    return json.dumps(value)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x80\x04\x95cos\nsystem\n.", id="pickle"),
        pytest.param(b"\xff\xfe\xfa", id="not-utf8"),
        pytest.param("", id="empty"),
        pytest.param("[1, 2]", id="list"),
        pytest.param("[" * 50_000, id="deep"),
        pytest.param("9" * 5000, id="huge-int"),
        pytest.param('{"v": 1}', id="missing-fields"),
        pytest.param(good_json(extra=1), id="extra-field"),
        pytest.param(good_json(v=2), id="future-version"),
        pytest.param(good_json(v=True), id="bool-version"),
        pytest.param(good_json(state="maybe"), id="unknown-state"),
        pytest.param(good_json(fetched_at="now"), id="text-time"),
        pytest.param(good_json(expires_at=True), id="bool-time"),
        pytest.param(good_json(expires_at=float("inf")), id="infinite-time"),
        pytest.param(good_json(fetched_at=float("nan")), id="nan-time"),
        pytest.param(good_json(status=42), id="bad-status"),
        pytest.param(good_json(status="200"), id="text-status"),
        pytest.param(good_json(body=5), id="number-body"),
        pytest.param(good_json(body="x" * (MAX_BYTES + 1)), id="long-body"),
        pytest.param(good_json(body=None), id="rules-without-body"),
        pytest.param(good_json(failing_since="x"), id="bad-failing-since"),
        pytest.param(good_json(expires_at=GOOD.fetched_at - 1), id="expires-first"),
    ],
)
def test_a_malformed_record_is_rejected(data: str | bytes) -> None:
    with pytest.raises(BadRecordError):
        RobotsRecord.from_json(data)


@PROPERTY
@given(st.binary(max_size=2000) | st.text(max_size=2000).map(str.encode))
def test_any_bytes_are_a_record_or_rejected(data: bytes) -> None:
    try:
        record = RobotsRecord.from_json(data)
    except BadRecordError:
        return
    assert RobotsRecord.from_json(record.to_json()) == record


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=12), inner, max_size=8)
    ),
    max_leaves=10,
)


@PROPERTY
@given(
    st.fixed_dictionaries(
        {},
        optional=dict.fromkeys(
            ("v", "state", "fetched_at", "expires_at", "status", "body"), json_values
        )
        | {"failing_since": json_values},
    )
)
def test_any_json_object_is_a_record_or_rejected(value: dict[str, object]) -> None:
    with contextlib.suppress(BadRecordError):
        RobotsRecord.from_json(json.dumps(value))


# --- rules ----------------------------------------------------------------------------


def rules(text: str, user_agent: str = "crawler") -> RobotsRules:
    parsed = parse_rules(text, user_agent=user_agent, base_url=BASE)
    assert parsed is not None
    return parsed


GROUPS = (
    "User-agent: *\nDisallow: /private/\nCrawl-delay: 4\n\n"
    "User-agent: crawler\nDisallow: /p/2.html\nAllow: /private/open\n\n"
    "User-agent: Mozilla\nDisallow: /\n"
)


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/", True),
        ("/p/2.html", False),  # our own group
        ("/p/2.html?x=1", False),
        ("/private/x", True),  # the * group does not apply when ours exists
        ("/robots.txt", True),
    ],
)
def test_our_product_token_picks_the_group(path: str, allowed: bool) -> None:
    assert rules(GROUPS).allows("http://example.com" + path) is allowed


def test_the_rotated_user_agent_is_never_matched() -> None:
    """The "Mozilla" group disallows everything; our token is not Mozilla."""
    assert rules(GROUPS).allows("http://example.com/anything")
    assert not rules(GROUPS, user_agent="Mozilla").allows("http://example.com/a")


@pytest.mark.parametrize(
    ("text", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 2.5\n", 2.5),
        ("User-agent: crawler\nCrawl-delay: 7\n", 7.0),
        (GROUPS, None),  # our group has none; the * group's is not ours
        ("User-agent: otherbot\nCrawl-delay: 9\n", None),
        ("User-agent: *\nCrawl-delay: soon\n", None),
        ("User-agent: *\nCrawl-delay: -3\n", None),
        ("User-agent: *\nCrawl-delay: inf\n", None),
        ("", None),
    ],
)
def test_crawl_delay_for_our_token_or_star(text: str, delay: float | None) -> None:
    assert rules(text).crawl_delay == delay


# --- groups: where Protego 0.7 departs from Google's reference parser ---------------


@pytest.mark.parametrize(
    "text",
    [
        "User-agent: crawler\nCrawl-delay: 5\nUser-agent: *\nDisallow: /\n",
        "User-agent: crawler\nRequest-rate: 1/5\nUser-agent: *\nDisallow: /\n",
        "User-agent: crawler\n\nUser-agent: *\nDisallow: /\n",
        "User-Agent: CRAWLER EXTRA\nDisallow: /\n",  # the token ends at the space
        "User-agent: crawler/1.0\nDisallow: /\n",  # ... and at the "/"
        "User-agent: Crawler\nAllow: /x\nUser-agent: crawler\nDisallow: /\n",
        "User-agent: * \nDisallow: /\n",
        "User-agent: * everyone\nDisallow: /\n",  # Google reads "* ..." as "*"
        "User-agent crawler\nDisallow /\n",  # forgotten colons
        "User-agent: crawler\n\nUser-agent: other\nDisallow: /\n",  # one group
    ],
)
def test_groups_that_apply_to_our_token(text: str) -> None:
    assert not rules(text).allows("http://example.com/page")


@pytest.mark.parametrize(
    "text",
    [
        "User-agent: crawl\nDisallow: /\n",  # a token, never a prefix of ours
        "User-agent: crawler-x\nDisallow: /\n",
        "User-agent: crawler2\nDisallow: /\n",
        "User-agent: mycrawler\nDisallow: /\n",
        "User-agent: *bot\nDisallow: /\n",
        "Disallow: /\nUser-agent: *\nAllow: /x\n",  # a rule before any group
        "User-agent: crawler\nUser-agent: *\n",  # our group, without rules
    ],
)
def test_groups_that_do_not_restrict_our_token(text: str) -> None:
    assert rules(text).allows("http://example.com/page")


@pytest.mark.parametrize(
    ("allow", "path", "allowed"),
    [
        ("/d/index.html", "/d/", True),
        ("/d/index.htm", "/d/", True),  # Google: any "/index.htm..." last segment
        ("/d/index.htm", "/d/index.htm", True),
        ("/d/index.htm", "/d/other", False),
        ("/d/index.html", "/d/x/", False),  # the directory itself, nothing under it
        ("/d/index.php", "/d/", False),
        ("/d/myindex.html", "/d/", False),
    ],
)
def test_an_allowed_index_page_allows_its_directory(
    allow: str, path: str, allowed: bool
) -> None:
    text = f"User-agent: *\nAllow: {allow}\nDisallow: /\n"
    assert rules(text).allows("http://example.com" + path) is allowed


@pytest.mark.parametrize(
    ("rule", "path", "allowed"),
    [
        ("/x$", "/x", False),
        ("/x$", "/x$y", True),  # anchored: not the literal prefix "/x$" (Protego)
        ("/x$", "/x%24", True),
        ("/a$b", "/a$b/c", False),  # a "$" inside is itself
        ("/a*b$", "/a/c/b", False),
        ("/a*b$", "/a/b/c", True),
        ("/a**b", "/a-b", False),
        ("*.pdf", "/docs/x.pdf", False),  # a leading "*"
        ("/a b", "/a%20b", False),  # a space is escaped before comparing
        ("/%7euser", "/~user", False),  # an escaped unreserved character is itself
        ("/%aa", "/%AA", False),  # hex case does not matter
        ("/a%2Fb", "/a/b", True),  # an escaped reserved character is not itself
        ("/a/b", "/a%2fb", True),
        ("/caf\u00e9", "/caf%C3%A9", False),
        ("/", "/robots.txt", True),  # RFC 9309 2.2.2: implicitly allowed
        ("/", "/robots.txt?x", False),
        ("/q?a=1", "/q?a=1&b=2", False),
        ("/q?a=1", "/q?b=2#?a=1", True),  # the fragment is not matched
        ("/%", "/%", False),  # a "%" that starts no escape is itself
    ],
)
def test_how_a_disallow_rule_matches(rule: str, path: str, allowed: bool) -> None:
    text = f"User-agent: *\nDisallow: {rule}\n"
    assert rules(text).allows("http://example.com" + path) is allowed


def test_a_crawl_delay_between_user_agent_lines_applies_to_the_group() -> None:
    text = "User-agent: crawler\nCrawl-delay: 5\nUser-agent: *\nDisallow: /p\n"
    assert rules(text).crawl_delay == 5.0
    assert rules(text, user_agent="otherbot").crawl_delay == 5.0


def test_merged_groups_keep_the_longest_crawl_delay() -> None:
    text = (
        "User-agent: crawler\nCrawl-delay: 2\nDisallow: /a\n"
        "User-agent: *\nCrawl-delay: 30\nDisallow: /c\n"
        "User-agent: crawler\nCrawl-delay: 7\nDisallow: /b\n"
    )
    parsed = rules(text)
    assert parsed.crawl_delay == 7.0
    assert parsed.allows("http://example.com/c")
    assert not parsed.allows("http://example.com/a")
    assert not parsed.allows("http://example.com/b")


def test_sitemaps_are_absolute_distinct_http_urls() -> None:
    text = (
        "Sitemap: http://example.com/a.xml\n"
        "sitemap: /b.xml\n"
        "Sitemap: http://example.com/a.xml\n"
        "Sitemap: ftp://example.com/c.xml\n"
        "Sitemap: http://[broken/d.xml\n"
    )
    assert rules(text).sitemaps == (
        "http://example.com/a.xml",
        "http://example.com/b.xml",
    )


def test_a_file_lists_at_most_so_many_sitemaps() -> None:
    text = "".join(f"Sitemap: http://example.com/{i}.xml\n" for i in range(1000))
    assert len(rules(text).sitemaps) == MAX_SITEMAPS


hostile_lines = st.lists(
    st.sampled_from(
        ["User-agent: ", "Disallow: ", "Allow: ", "Crawl-delay: ", "Sitemap: ", ""]
    ).flatmap(lambda field: st.text(max_size=60).map(lambda value: field + value)),
    max_size=30,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))


@PROPERTY
@given(
    st.binary(max_size=4000) | hostile_lines,
    st.sampled_from(["/", "/p/1.html", "/%ff?q=\u00e9", "/a*b$", "//x"]),
)
def test_a_hostile_file_never_raises(body: bytes, path: str) -> None:
    text, _ = robots_text(body)
    parsed = parse_rules(text, user_agent="crawler", base_url=BASE)
    if parsed is not None:
        assert isinstance(parsed.allows("http://example.com" + path), bool)
        assert parsed.crawl_delay is None or parsed.crawl_delay >= 0
        assert len(parsed.sitemaps) <= MAX_SITEMAPS


def test_a_huge_line_is_parsed() -> None:
    body = b"User-agent: *\nDisallow: /" + b"x*" * (MAX_BYTES // 2) + b"\n"
    text, truncated = robots_text(body)
    assert truncated
    assert rules(text).allows("http://example.com/xy")


def test_a_parser_failure_means_none() -> None:
    """The parser takes str only; anything it raises on is reported as None."""
    not_text: str = b"bytes"  # type: ignore[assignment]
    assert parse_rules(not_text, user_agent="crawler", base_url=BASE) is None
