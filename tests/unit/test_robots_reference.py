"""Google's robots.txt conformance cases (google/robotstxt, robots_test.cc) as data.

Each case names the ``TEST(RobotsUnittest, ...)`` it comes from, and is checked
through our decision (``crawler.policy.robotsrules.parse_rules``), the one
RobotsMiddleware uses. Cases where we deliberately differ, because RFC 9309 says
otherwise, carry ``ours`` (our answer) and ``why``; docs/politeness.md lists them.
Cases of the reference's internal helpers (line counting, BOM skipping, path
extraction, pattern escaping) are adapted to decisions that depend on them. Last, a
Python port of the reference matcher (tests/unit/google_robots_port.py), checked
against these cases, is compared with our decision on generated files.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.policy.robotsfetch import RobotsConfig
from crawler.policy.robotsrules import parse_rules, robots_text
from tests.unit import google_robots_port as google
from tests.unit.properties import PROPERTY

BASE = "http://foo.bar/robots.txt"
RFC_ENCODE = (
    "RFC 9309 2.2.2: octets outside US-ASCII MUST be percent-encoded before "
    "comparison, so the raw and the encoded URL are the same URL"
)
RFC_UNRESERVED = (
    "RFC 3986 2.3/6.2.2.2: a percent-encoded unreserved character is the character "
    "itself (the reference's own comment calls relying on the difference illegal)"
)


@dataclass(frozen=True)
class Case:
    test: str  # the robots_test.cc test the case comes from
    robotstxt: str
    agent: str
    url: str
    allowed: bool  # the reference parser's answer
    ours: bool | None = None  # our answer where RFC 9309 makes us differ
    why: str = ""


def cases(test: str, robotstxt: str, *checks: tuple[str, str, bool]) -> list[Case]:
    return [
        Case(test, robotstxt, agent, url, allowed) for agent, url, allowed in checks
    ]


FOO = "http://foo.bar"
GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\n"
    "user-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\n"
    "user-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n"
)
UPPER = "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n"
LOWER = "user-agent: FooBot\nallow: /x/\ndisallow: /\n"
CAMEL = "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"
UA_UPPER = "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n"
UA_LOWER = "User-Agent: foo bar\nAllow: /x/\nDisallow: /\n"
UA_CAMEL = "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n"
GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
ONLY_SPECIFIC = (
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
    "user-agent: BazBot\ndisallow: /\n"
)
PAGE = "http://foo.bar/x/page.html"


def fish(allow: str) -> str:
    return f"user-agent: FooBot\ndisallow: /\nallow: {allow}\n"


def foobot(*lines: str) -> str:
    return "user-agent: FooBot\n" + "".join(line + "\n" for line in lines)


REFERENCE: list[Case] = [
    *cases(
        "GoogleOnly_SystemTest",
        "",
        ("FooBot", "", True),
    ),
    *cases(
        "GoogleOnly_SystemTest",
        "user-agent: FooBot\ndisallow: /\n",
        ("", "", True),  # an empty token matches no group
        ("FooBot", "", False),  # an empty URL is the path "/"
    ),
    *cases("GoogleOnly_SystemTest", "", ("", "", True)),
    *cases(
        "ID_LineSyntax_Line",
        "user-agent: FooBot\ndisallow: /\n",
        ("FooBot", FOO + "/x/y", False),
    ),
    *cases(
        "ID_LineSyntax_Line", "foo: FooBot\nbar: /\n", ("FooBot", FOO + "/x/y", True)
    ),
    *cases(
        "ID_LineSyntax_Line",
        "user-agent FooBot\ndisallow /\n",  # a forgotten colon
        ("FooBot", FOO + "/x/y", False),
    ),
    *cases(
        "ID_LineSyntax_Groups",
        GROUPS,
        ("FooBot", FOO + "/x/b", True),
        ("FooBot", FOO + "/z/d", True),
        ("FooBot", FOO + "/y/c", False),
        ("BarBot", FOO + "/y/c", True),
        ("BarBot", FOO + "/w/a", True),
        ("BarBot", FOO + "/z/d", False),
        ("BazBot", FOO + "/z/d", True),
        ("FooBot", FOO + "/foo/bar/", False),  # rules outside groups are ignored
        ("BarBot", FOO + "/foo/bar/", False),
        ("BazBot", FOO + "/foo/bar/", False),
    ),
    *cases(
        "ID_LineSyntax_Groups_OtherRules",
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\n"
        "Disallow: /\n",
        ("FooBot", FOO + "/", False),
        ("BarBot", FOO + "/", False),
    ),
    *cases(
        "ID_LineSyntax_Groups_OtherRules",
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\n"
        "Disallow: /\n",
        ("FooBot", FOO + "/", False),
        ("BarBot", FOO + "/", False),
    ),
    *[
        case
        for text in (UPPER, LOWER, CAMEL)
        for case in cases(
            "ID_REPLineNamesCaseInsensitive",
            text,
            ("FooBot", FOO + "/x/y", True),
            ("FooBot", FOO + "/a/b", False),
        )
    ],
    *[
        case
        for text in (UA_UPPER, UA_LOWER, UA_CAMEL)
        for agent in ("Foo", "foo")
        for case in cases(
            "ID_UserAgentValueCaseInsensitive",
            text,
            (agent, FOO + "/x/y", True),
            (agent, FOO + "/a/b", False),
        )
    ],
    *cases(
        "GoogleOnly_AcceptUserAgentUpToFirstSpace",
        "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
        ("Foo", FOO + "/x/y", True),
        ("Foo Bar", FOO + "/x/y", False),
    ),
    *cases("ID_GlobalGroups_Secondary", "", ("FooBot", FOO + "/x/y", True)),
    *cases(
        "ID_GlobalGroups_Secondary",
        GLOBAL,
        ("FooBot", FOO + "/x/y", False),
        ("BarBot", FOO + "/x/y", True),
    ),
    *cases("ID_GlobalGroups_Secondary", ONLY_SPECIFIC, ("QuxBot", FOO + "/x/y", True)),
    *cases(
        "ID_AllowDisallow_Value_CaseSensitive",
        foobot("disallow: /x/"),
        ("FooBot", FOO + "/x/y", False),
    ),
    *cases(
        "ID_AllowDisallow_Value_CaseSensitive",
        foobot("disallow: /X/"),
        ("FooBot", FOO + "/x/y", True),
    ),
    *cases(
        "ID_LongestMatch",
        foobot("disallow: /x/page.html", "allow: /x/"),
        ("FooBot", PAGE, False),
    ),
    *cases(
        "ID_LongestMatch",
        foobot("allow: /x/page.html", "disallow: /x/"),
        ("FooBot", PAGE, True),
        ("FooBot", FOO + "/x/", False),
    ),
    *cases("ID_LongestMatch", foobot("disallow: ", "allow: "), ("FooBot", PAGE, True)),
    *cases(
        "ID_LongestMatch", foobot("disallow: /", "allow: /"), ("FooBot", PAGE, True)
    ),
    *cases(
        "ID_LongestMatch",
        foobot("disallow: /x", "allow: /x/"),
        ("FooBot", FOO + "/x", False),
        ("FooBot", FOO + "/x/", True),
    ),
    *cases(
        "ID_LongestMatch",
        foobot("disallow: /x/page.html", "allow: /x/page.html"),
        ("FooBot", PAGE, True),
    ),
    *cases(
        "ID_LongestMatch",
        foobot("allow: /page", "disallow: /*.html"),
        ("FooBot", FOO + "/page.html", False),
        ("FooBot", FOO + "/page", True),
    ),
    *cases(
        "ID_LongestMatch",
        foobot("allow: /x/page.", "disallow: /*.html"),
        ("FooBot", PAGE, True),
        ("FooBot", FOO + "/x/y.html", False),
    ),
    *cases(
        "ID_LongestMatch",
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        ("FooBot", FOO + "/x/page", True),
        ("FooBot", FOO + "/y/page", False),
    ),
    *cases(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\n"
        "Allow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
        ("FooBot", FOO + "/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True),
    ),
    *cases(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n",
        ("FooBot", FOO + "/foo/bar/%E3%83%84", True),
    ),
    Case(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n",
        "FooBot",
        FOO + "/foo/bar/\u30c4",
        allowed=False,
        ours=True,
        why=RFC_ENCODE,
    ),
    *cases(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        ("FooBot", FOO + "/foo/bar/%E3%83%84", True),
    ),
    Case(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "FooBot",
        FOO + "/foo/bar/\u30c4",
        allowed=False,
        ours=True,
        why=RFC_ENCODE,
    ),
    Case(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "FooBot",
        FOO + "/foo/bar/baz",
        allowed=False,
        ours=True,
        why=RFC_UNRESERVED,
    ),
    *cases(
        "ID_Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        ("FooBot", FOO + "/foo/bar/%62%61%7A", True),
    ),
    *cases(
        "ID_SpecialCharacters",
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        ("FooBot", FOO + "/foo/bar/quz", False),
        ("FooBot", FOO + "/foo/quz", True),
        ("FooBot", FOO + "/foo//quz", True),
        ("FooBot", FOO + "/foo/bax/quz", True),
    ),
    *cases(
        "ID_SpecialCharacters",
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        ("FooBot", FOO + "/foo/bar", False),
        ("FooBot", FOO + "/foo/bar/qux", True),
        ("FooBot", FOO + "/foo/bar/", True),
        ("FooBot", FOO + "/foo/bar/baz", True),
    ),
    *cases(
        "ID_SpecialCharacters",
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        ("FooBot", FOO + "/foo/bar", True),
        ("FooBot", FOO + "/foo/quz", False),
    ),
    *cases(
        "GoogleOnly_IndexHTMLisDirectory",
        "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
        ("foobot", "http://foo.com/allowed-slash/", True),
        ("foobot", "http://foo.com/allowed-slash/index.htm", False),
        ("foobot", "http://foo.com/allowed-slash/index.html", True),
        ("foobot", "http://foo.com/anyother-url", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/fish"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/fish", True),
        ("FooBot", FOO + "/fish.html", True),
        ("FooBot", FOO + "/fish/salmon.html", True),
        ("FooBot", FOO + "/fishheads", True),
        ("FooBot", FOO + "/fishheads/yummy.html", True),
        ("FooBot", FOO + "/fish.html?id=anything", True),
        ("FooBot", FOO + "/Fish.asp", False),
        ("FooBot", FOO + "/catfish", False),
        ("FooBot", FOO + "/?id=fish", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/fish*"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/fish", True),
        ("FooBot", FOO + "/fish.html", True),
        ("FooBot", FOO + "/fish/salmon.html", True),
        ("FooBot", FOO + "/fishheads", True),
        ("FooBot", FOO + "/fishheads/yummy.html", True),
        ("FooBot", FOO + "/fish.html?id=anything", True),
        ("FooBot", FOO + "/Fish.bar", False),
        ("FooBot", FOO + "/catfish", False),
        ("FooBot", FOO + "/?id=fish", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/fish/"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/fish/", True),
        ("FooBot", FOO + "/fish/salmon", True),
        ("FooBot", FOO + "/fish/?salmon", True),
        ("FooBot", FOO + "/fish/salmon.html", True),
        ("FooBot", FOO + "/fish/?id=anything", True),
        ("FooBot", FOO + "/fish", False),
        ("FooBot", FOO + "/fish.html", False),
        ("FooBot", FOO + "/Fish/Salmon.html", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/*.php"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/filename.php", True),
        ("FooBot", FOO + "/folder/filename.php", True),
        ("FooBot", FOO + "/folder/filename.php?parameters", True),
        ("FooBot", FOO + "//folder/any.php.file.html", True),
        ("FooBot", FOO + "/filename.php/", True),
        ("FooBot", FOO + "/index?f=filename.php/", True),
        ("FooBot", FOO + "/php/", False),
        ("FooBot", FOO + "/index?php", False),
        ("FooBot", FOO + "/windows.PHP", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/*.php$"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/filename.php", True),
        ("FooBot", FOO + "/folder/filename.php", True),
        ("FooBot", FOO + "/filename.php?parameters", False),
        ("FooBot", FOO + "/filename.php/", False),
        ("FooBot", FOO + "/filename.php5", False),
        ("FooBot", FOO + "/php/", False),
        ("FooBot", FOO + "/filename?php", False),
        ("FooBot", FOO + "/aaaphpaaa", False),
        ("FooBot", FOO + "//windows.PHP", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        fish("/fish*.php"),
        ("FooBot", FOO + "/bar", False),
        ("FooBot", FOO + "/fish.php", True),
        ("FooBot", FOO + "/fishheads/catfish.php?parameters", True),
        ("FooBot", FOO + "/Fish.PHP", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        foobot("allow: /p", "disallow: /"),
        ("FooBot", "http://example.com/page", True),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        foobot("allow: /folder", "disallow: /folder"),
        ("FooBot", "http://example.com/folder/page", True),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        foobot("allow: /page", "disallow: /*.htm"),
        ("FooBot", "http://example.com/page.htm", False),
    ),
    *cases(
        "GoogleOnly_DocumentationChecks",
        foobot("allow: /$", "disallow: /"),
        ("FooBot", "http://example.com/", True),
        ("FooBot", "http://example.com/page.html", False),
    ),
    # Adapted from TestGetPathParamsQuery: rules see the path, params and query of
    # a URL, never its fragment.
    *cases(
        "TestGetPathParamsQuery",
        foobot("disallow: /a/b?c=d&e=f$", "disallow: /$", "disallow: /a;b$"),
        ("FooBot", "http://www.example.com/a/b?c=d&e=f#fragment", False),
        ("FooBot", "http://www.example.com", False),
        ("FooBot", "http://www.example.com/", False),
        ("FooBot", "http://www.example.com/a;b#c", False),
        ("FooBot", "http://www.example.com/a/b?c=d", True),
    ),
    # Adapted from TestMaybeEscapePattern: a rule's escapes are compared normalized
    # and its non-ASCII characters percent-encoded.
    *cases(
        "TestMaybeEscapePattern",
        foobot("disallow: /%aa", "disallow: /\u00e1"),
        ("FooBot", FOO + "/%AA", False),
        ("FooBot", FOO + "/%C3%A1", False),
        ("FooBot", FOO + "/a", True),
    ),
]


def decide(robotstxt: str, agent: str, url: str) -> bool:
    rules = parse_rules(robotstxt, user_agent=agent, base_url=BASE)
    assert rules is not None
    return rules.allows(url)


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=f"{c.test}-{i}") for i, c in enumerate(REFERENCE)]
)
def test_reference_case(case: Case) -> None:
    expected = case.allowed if case.ours is None else case.ours
    assert decide(case.robotstxt, case.agent, case.url) is expected


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=f"{c.test}-{i}") for i, c in enumerate(REFERENCE)]
)
def test_the_port_of_the_reference_parser_passes_its_cases(case: Case) -> None:
    """The oracle below is only as good as its agreement with robots_test.cc."""
    robotstxt = case.robotstxt.encode()
    assert google.allowed(robotstxt, case.agent, case.url) is case.allowed


def test_every_departure_says_why() -> None:
    departures = [case for case in REFERENCE if case.ours is not None]
    assert departures, "the known departures are listed"
    for case in departures:
        assert case.ours != case.allowed
        assert case.why


# --- ID_VerifyValidUserAgentsToObey: the product token we obey -----------------------


def config_with(token: str) -> RobotsConfig:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.set("ROBOTSTXT_USER_AGENT", token)
    return RobotsConfig.from_settings(settings)


@pytest.mark.parametrize("token", ["Foobot", "Foobot-Bar", "Foo_Bar"])
def test_a_valid_product_token_is_accepted(token: str) -> None:
    assert config_with(token).user_agent == token


@pytest.mark.parametrize(
    "token", ["\u30c4", "Foobot*", " Foobot ", "Foobot/2.1", "Foobot Bar"]
)
def test_an_invalid_product_token_is_refused(token: str) -> None:
    with pytest.raises(ValueError, match="ROBOTSTXT_USER_AGENT"):
        config_with(token)


def test_an_empty_token_is_the_bot_name() -> None:
    """ROBOTSTXT_USER_AGENT unset: the project's BOT_NAME (Scrapy's own default)."""
    assert config_with("").user_agent == "scrapybot"


# --- GoogleOnly_LineTooLong ---------------------------------------------------------

MAX_LINE_LEN = 2083 * 8


def long_path(fill: str, key: str) -> str:
    path = "/x/"
    while len(path) < MAX_LINE_LEN - len("/x/") - len(key) + len("\n"):
        path += fill
    return path


def test_a_long_disallow_line_is_cut() -> None:
    """GoogleOnly_LineTooLong: the rule is cut at 8 x 2083 bytes and still obeyed."""
    path = long_path("a", "disallow: ")
    robotstxt = f"user-agent: FooBot\ndisallow: {path}/qux\n"
    assert decide(robotstxt, "FooBot", FOO + "/fux")
    assert not decide(robotstxt, "FooBot", FOO + path + "/fux")


def test_long_allow_lines_are_cut() -> None:
    """GoogleOnly_LineTooLong: a cut allow rule matches more than it said."""
    path_a, path_b = long_path("a", "allow: "), long_path("b", "allow: ")
    robotstxt = (
        f"user-agent: FooBot\ndisallow: /\nallow: {path_a}/qux\nallow: {path_b}/qux\n"
    )
    assert not decide(robotstxt, "FooBot", FOO + "/")
    assert decide(robotstxt, "FooBot", FOO + path_a + "/qux")
    assert decide(robotstxt, "FooBot", FOO + path_b + "/fux")


# --- ID_LinesNumbersAreCountedCorrectly: every line ending ends a line ---------------

LINES = (
    "User-Agent: foo",
    "Allow: /some/path",
    "User-Agent: bar",
    "",
    "",
    "Disallow: /",
)


@pytest.mark.parametrize(
    "robotstxt",
    [
        pytest.param("\n".join(LINES) + "\n", id="unix"),
        pytest.param("\r\n".join(LINES) + "\r\n", id="dos"),
        pytest.param("\r".join(LINES) + "\r", id="mac"),
        pytest.param("\n".join(LINES), id="no-final-newline"),
        pytest.param(
            "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
            id="mixed",
        ),
    ],
)
def test_line_endings(robotstxt: str) -> None:
    """ID_LinesNumbersAreCountedCorrectly, as decisions: four directives, two groups."""
    assert decide(robotstxt, "foo", FOO + "/some/path")
    assert decide(robotstxt, "foo", FOO + "/x")
    assert not decide(robotstxt, "bar", FOO + "/x")


# --- ID_UTF8ByteOrderMarkIsSkipped --------------------------------------------------


@pytest.mark.parametrize(
    "bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"], ids=["full", "partial2", "partial1"]
)
def test_a_leading_byte_order_mark_is_skipped(bom: bytes) -> None:
    text, _ = robots_text(bom + b"User-Agent: foo\nDisallow: /AnyValue\n")
    assert not decide(text, "foo", FOO + "/AnyValue")


def test_a_broken_byte_order_mark_spoils_the_first_line() -> None:
    """The first line is garbage: the Disallow after it belongs to no group."""
    text, _ = robots_text(b"\xef\x11\xbfUser-Agent: foo\nDisallow: /AnyValue\n")
    assert decide(text, "foo", FOO + "/AnyValue")


def test_a_byte_order_mark_inside_the_file_spoils_its_line() -> None:
    body = b"User-Agent: foo\nDisallow: /\n\xef\xbb\xbfAllow: /AnyValue\n"
    text, _ = robots_text(body)
    assert not decide(text, "foo", FOO + "/AnyValue")


# --- ID_NonStandardLineExample_Sitemap ----------------------------------------------

SITEMAP = "http://foo.bar/sitemap.xml"
GROUP_LINES = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"


@pytest.mark.parametrize(
    "robotstxt",
    [GROUP_LINES + f"Sitemap: {SITEMAP}\n", f"Sitemap: {SITEMAP}\n" + GROUP_LINES],
    ids=["after-groups", "before-groups"],
)
def test_a_sitemap_line_may_be_anywhere(robotstxt: str) -> None:
    for agent in ("foo", "bar", "crawler"):
        rules = parse_rules(robotstxt, user_agent=agent, base_url=BASE)
        assert rules is not None
        assert rules.sitemaps == (SITEMAP,)


# --- our decision against the port, on generated files -------------------------------

AGENTS = [
    "crawler", "CRAWLER", "Crawler/2.0", "crawler bot", "crawl", "crawlerx", "crawler*",
    "*", "* all", "*bot", "other", "",
]  # fmt: skip
KEYS = [
    "User-agent", "user-agent", "USER-AGENT", "useragent", "User agent", "Allow",
    "allow", "Disallow", "disallow", "dissallow", "Crawl-delay", "Sitemap", "Unknown",
]  # fmt: skip
# Paths and patterns without "%" and non-ASCII: there we differ on purpose (above).
PATH_TEXT = st.text(alphabet="/ab.?=&;:*$-_~!,+", max_size=8)


@st.composite
def robots_files(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        key = draw(st.sampled_from(KEYS))
        if key.lower().replace(" ", "-").startswith(("user-agent", "useragent")):
            value = draw(st.sampled_from(AGENTS))
        elif key in ("Crawl-delay", "Sitemap", "Unknown"):
            value = draw(st.sampled_from(["1", "http://example.com/s.xml", "x"]))
        else:
            value = draw(st.sampled_from(["", "/"]) | PATH_TEXT.map(lambda t: "/" + t))
        separator = draw(st.sampled_from([": ", ":", " ", " :\t"]))
        comment = draw(st.sampled_from(["", "", " # note", "#"]))
        blank = draw(st.booleans()) and draw(st.booleans())
        lines.append("" if blank else key + separator + value + comment)
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return ending.join(lines)


@PROPERTY
@given(robots_files(), PATH_TEXT.map(lambda t: "/" + t.replace("*", "")))
def test_our_decision_agrees_with_the_reference_parser(
    robotstxt: str, path: str
) -> None:
    url = "http://example.com" + path
    expected = google.allowed(robotstxt.encode(), "crawler", url)
    if path == "/robots.txt":
        expected = True  # RFC 9309 2.2.2: implicitly allowed
    assert decide(robotstxt, "crawler", url) is expected
