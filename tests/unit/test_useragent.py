"""UserAgentMiddleware: settings parsing, rotation modes and Referer modes."""

from __future__ import annotations

import itertools
import json
import logging
import random
from collections import Counter

import pytest
from scrapy import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

import crawler.defaults as project
from crawler import __version__
from crawler.context.startup import StartupFailure
from crawler.meta import ROBOTS_FETCH
from crawler.middlewares.useragent import (
    StickyUserAgents,
    UserAgentConfig,
    UserAgentMiddleware,
    split_outside_parentheses,
)

BOT = "Mozilla/5.0 (compatible; crawler/1.0; +https://github.com/crawler/crawler)"
CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/142.0.0.0 Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:145.0) Gecko/20100101 Firefox/145.0"


def settings_dict(**overrides: object) -> dict[str, object]:
    values = {
        name: getattr(project, name)
        for name in dir(project)
        if name.startswith(("USERAGENT_", "REFERER_", "ROBOTSTXT_"))
    }
    values.update(BOT_NAME="crawler", ADDONS={"crawler.addon.Frontier": 0})
    values.update(overrides)
    return values


def settings(**overrides: object) -> Settings:
    return Settings(settings_dict(**overrides))


def config(**overrides: object) -> UserAgentConfig:
    return UserAgentConfig.from_settings(settings(**overrides))


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class InTurn(random.Random):
    """An RNG whose choice() takes the items in turn, so every draw differs."""

    def __init__(self) -> None:
        super().__init__(0)
        self._counter = itertools.count()

    def choice(self, seq):  # type: ignore[override]
        return seq[next(self._counter) % len(seq)]


def middleware(rng=None, clock=None, **overrides: object) -> UserAgentMiddleware:
    return UserAgentMiddleware(
        config(**overrides), rng=rng or random.Random(7), clock=clock or Clock()
    )


def user_agent(request: Request) -> str:
    return request.headers[b"User-Agent"].decode()


# --- the settings ----------------------------------------------------------------


PLACEHOLDER = "https://example.com/crawler-contact"
CONTACT = "https://bots.example.org/who-we-are"


def test_the_default_list_has_browsers_of_every_kind_and_the_bot_token():
    agents = config().user_agents
    assert f"Mozilla/5.0 (compatible; crawler/{__version__}; +{PLACEHOLDER})" in agents
    for marker in ("Chrome/142", "Firefox/145", "Version/26", "Edg/142", "Android"):
        assert any(marker in agent for agent in agents), marker
    assert len(set(agents)) == len(agents)


def test_every_default_entry_names_the_bot_and_its_contact():
    agents = config(ROBOTSTXT_USER_AGENT="mybot", USERAGENT_CONTACT=CONTACT).user_agents
    assert len(agents) == len(project.USERAGENT_LIST)
    for agent in agents:
        assert f"; compatible; mybot/{__version__}; +{CONTACT})" in agent or (
            agent == f"Mozilla/5.0 (compatible; mybot/{__version__}; +{CONTACT})"
        ), agent
        assert "{" not in agent
        assert "crawler/" not in agent
    assert (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; compatible; "
        f"mybot/{__version__}; +{CONTACT}) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/142.0.0.0 Safari/537.36"
    ) in agents


def test_a_list_the_user_sets_is_sent_exactly_as_given():
    mine = [CHROME, "MyBot/{version} (+{contact})"]
    assert config(USERAGENT_LIST=mine, USERAGENT_CONTACT=CONTACT).user_agents == (
        CHROME,
        "MyBot/{version} (+{contact})",
    )


@pytest.mark.parametrize(
    "contact",
    ["", "mailto:ops@example.org", "https://a.example/x y", "https://a.example/(x)", 3],
)
def test_a_bad_contact_url_is_refused(contact):
    with pytest.raises(ValueError, match=r"^USERAGENT_CONTACT must be an http"):
        config(USERAGENT_CONTACT=contact)


def placeholder_warnings(caplog, settings: dict[str, object], *urls: str) -> list[str]:
    """The WARNING lines a middleware made with *settings* logs for *urls*."""
    with caplog.at_level(logging.WARNING):
        crawler = get_crawler(settings_dict=settings)
        middleware = UserAgentMiddleware.from_crawler(crawler)
        assert isinstance(middleware, UserAgentMiddleware)
        for url in urls:
            middleware.process_request(Request(url))
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_placeholder_contact_is_warned_of_once_at_the_first_host_off_this_machine(
    caplog,
):
    urls = (
        "http://127.0.0.2/",
        "http://[::1]/",
        "https://a.example/",
        "https://b.example/",
    )
    warnings = placeholder_warnings(caplog, settings_dict(), *urls[:2])
    assert warnings == []  # loopback: nobody reads it
    warnings = placeholder_warnings(caplog, settings_dict(), *urls)
    assert len(warnings) == 1
    assert f"USERAGENT_CONTACT is the placeholder {PLACEHOLDER}" in warnings[0]


def test_a_contact_of_ones_own_is_never_warned_of(caplog):
    settings = settings_dict(USERAGENT_CONTACT=CONTACT)
    assert placeholder_warnings(caplog, settings, "https://a.example/") == []


def test_a_file_is_read_one_entry_a_line_without_blanks_and_comments(tmp_path):
    path = tmp_path / "agents.txt"
    path.write_text(f"# browsers\n\n  {CHROME}  \n# the bot\n{BOT}\n\n")
    assert config(USERAGENT_LIST=str(path)).user_agents == (CHROME, BOT)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param([CHROME, " ", FIREFOX], (CHROME, FIREFOX), id="list"),
        pytest.param(json.dumps([CHROME, BOT]), (CHROME, BOT), id="json"),
        pytest.param(f"{CHROME},{FIREFOX}", (CHROME, FIREFOX), id="comma-string"),
        pytest.param(f" {FIREFOX} , {BOT} ", (FIREFOX, BOT), id="comma-spaces"),
        pytest.param(CHROME, (CHROME,), id="one-string-with-commas-in-parentheses"),
        pytest.param("crawler/1.0", ("crawler/1.0",), id="a-token-is-not-a-path"),
    ],
)
def test_list_settings_from_the_command_line(value, expected):
    assert config(USERAGENT_LIST=value).user_agents == expected


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("a,b", ["a", "b"]),
        ("a (x, y),b", ["a (x, y)", "b"]),
        ("a (x, (y, z)) w,b", ["a (x, (y, z)) w", "b"]),
        ("a ) b, c", ["a ) b", " c"]),
        ("", [""]),
    ],
)
def test_commas_inside_parentheses_do_not_split(text, parts):
    assert split_outside_parentheses(text) == parts


def empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing yet\n\n")
    return str(path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"USERAGENT_LIST": []}, "USERAGENT_LIST is empty"),
        ({"USERAGENT_LIST": ""}, "USERAGENT_LIST is empty"),
        ({"USERAGENT_LIST": "[]"}, "USERAGENT_LIST is empty"),
        ({"USERAGENT_LIST": ["", "  "]}, "USERAGENT_LIST is empty"),
        ({"USERAGENT_LIST": empty_file}, "USERAGENT_LIST is empty"),
        ({"USERAGENT_LIST": "/nonexistent/agents.txt"}, "USERAGENT_LIST: cannot read"),
        ({"USERAGENT_LIST": "agents.txt"}, "USERAGENT_LIST: cannot read"),
        ({"USERAGENT_LIST": "~no-such-user/ua.txt"}, "USERAGENT_LIST: cannot read"),
        ({"USERAGENT_LIST": "[not json"}, "USERAGENT_LIST is not a valid JSON"),
        ({"USERAGENT_LIST": [CHROME, 3]}, "USERAGENT_LIST entries must be strings"),
        ({"USERAGENT_LIST": 42}, "USERAGENT_LIST must be a list or a string"),
        (
            {"USERAGENT_LIST": ["ok\r\nX-Injected: 1"]},
            "USERAGENT_LIST entries must not hold control characters",
        ),
        ({"USERAGENT_MODE": "per-site"}, "USERAGENT_MODE must be one of per-request"),
        ({"USERAGENT_MODE": ""}, "USERAGENT_MODE must be one of"),
        ({"USERAGENT_STICKY_TTL": 0}, "USERAGENT_STICKY_TTL must be > 0"),
        ({"USERAGENT_STICKY_TTL": "soon"}, "USERAGENT_STICKY_TTL must be a number"),
        ({"REFERER_MODE": "random"}, "REFERER_MODE must be one of parent, rotate"),
        ({"REFERER_MODE": "rotate"}, "REFERER_LIST is empty"),
        (
            {"REFERER_MODE": "rotate", "REFERER_LIST": empty_file},
            "REFERER_LIST is empty",
        ),
        (
            {"REFERER_MODE": "rotate", "REFERER_LIST": "www.example.com"},
            "REFERER_LIST entries must be http(s) URLs",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(overrides, message, tmp_path):
    values = {k: v(tmp_path) if callable(v) else v for k, v in overrides.items()}
    with pytest.raises(ValueError, match=r"^[^\n]*$") as raised:
        config(**values)
    assert str(raised.value).startswith(message.split(" ", 1)[0])
    assert message in str(raised.value)


def test_an_empty_referer_list_is_fine_unless_it_is_rotated():
    assert config(REFERER_MODE="none", REFERER_LIST=[]).referers == ()


def test_a_bad_setting_stops_the_crawl_with_one_line(caplog):
    crawler = get_crawler(settings_dict=settings_dict(USERAGENT_LIST=[]))
    with caplog.at_level(logging.ERROR):
        built = UserAgentMiddleware.from_crawler(crawler)
    assert isinstance(built, StartupFailure)
    assert not hasattr(built, "process_request")
    assert [r.getMessage() for r in caplog.records] == [
        (
            "Bad setting: USERAGENT_LIST is empty: give User-Agent strings (a list, "
            "a JSON or comma-separated string, or a file with one per line)"
        )
    ]


# --- User-Agent rotation ---------------------------------------------------------


def test_per_request_mode_varies_the_user_agent():
    mw = middleware()
    agents = []
    for page in range(200):
        request = Request(f"http://a.example/{page}")
        mw.process_request(request)
        agents.append(user_agent(request))
    counts = Counter(agents)
    assert set(counts) == set(config().user_agents)  # every one is used
    assert max(counts.values()) < 40  # and none dominates


def test_per_host_mode_keeps_one_user_agent_per_host_until_it_expires():
    clock = Clock()
    mw = middleware(rng=InTurn(), clock=clock, USERAGENT_MODE="per-host")

    def fetch(url: str) -> str:
        request = Request(url)
        mw.process_request(request)
        return user_agent(request)

    first_a, first_b = fetch("http://a.example/"), fetch("http://b.example:8080/x")
    assert first_a != first_b
    clock.now += 3599
    assert fetch("http://a.example/p/1.html") == first_a
    assert fetch("http://B.example/other") == first_b  # hosts are case-insensitive
    clock.now += 1  # the TTL of 3600 s has passed
    assert fetch("http://a.example/p/2.html") != first_a


def test_the_sticky_map_forgets_the_least_recently_used_host():
    sticky = StickyUserAgents(ttl=60, capacity=2)
    draws = iter(["one", "two", "three", "four"])
    assert sticky.get("a", now=0, draw=lambda: next(draws)) == "one"
    assert sticky.get("b", now=0, draw=lambda: next(draws)) == "two"
    assert sticky.get("a", now=1, draw=lambda: next(draws)) == "one"  # a is fresh
    assert sticky.get("c", now=1, draw=lambda: next(draws)) == "three"  # b goes
    assert len(sticky) == 2
    assert sticky.get("a", now=2, draw=lambda: next(draws)) == "one"
    assert sticky.get("b", now=2, draw=lambda: next(draws)) == "four"


def test_a_user_agent_the_spider_set_is_kept():
    request = Request("http://a.example/", headers={"User-Agent": "MySpider/2"})
    middleware().process_request(request)
    assert user_agent(request) == "MySpider/2"


def test_our_robots_txt_fetch_keeps_the_bots_own_user_agent():
    own = f"crawler/{__version__} (+{CONTACT})"
    request = Request(
        "http://a.example/robots.txt",
        headers={"User-Agent": own},
        meta={ROBOTS_FETCH: True},
    )
    middleware(USERAGENT_LIST=[CHROME, own]).process_request(request)
    assert user_agent(request) == own


def test_a_retry_carrying_one_of_ours_is_drawn_again():
    mw = middleware(rng=InTurn(), USERAGENT_LIST=[CHROME, FIREFOX])
    request = Request("http://a.example/")
    mw.process_request(request)
    assert user_agent(request) == CHROME
    retry = request.replace()  # as RetryMiddleware makes it: headers kept
    mw.process_request(retry)
    assert user_agent(retry) == FIREFOX


def test_urls_without_a_host_get_a_user_agent_too():
    request = Request("data:,hello")
    middleware(USERAGENT_MODE="per-host").process_request(request)
    assert user_agent(request) in config().user_agents


# --- Referer ---------------------------------------------------------------------

PARENT = "http://a.example/parent.html"


def referred() -> Request:
    return Request("http://b.example/child", headers={"Referer": PARENT})


def test_parent_mode_keeps_the_referer_scrapy_set_from_the_parent_page():
    request = referred()
    middleware(REFERER_MODE="parent").process_request(request)
    assert request.headers[b"Referer"] == PARENT.encode()
    seed = Request("http://b.example/")
    middleware(REFERER_MODE="parent").process_request(seed)
    assert b"Referer" not in seed.headers


def test_none_mode_removes_the_referer():
    request = referred()
    middleware(REFERER_MODE="none").process_request(request)
    assert b"Referer" not in request.headers


def test_rotate_mode_replaces_the_referer_from_the_list():
    referers = ["https://www.google.com/", "https://duckduckgo.com/"]
    mw = middleware(REFERER_MODE="rotate", REFERER_LIST=referers)
    seen = []
    for _ in range(20):
        request = referred()
        mw.process_request(request)
        seen.append(request.headers[b"Referer"].decode())
    assert set(seen) == set(referers)


def test_the_robots_token_is_not_the_middlewares_business():
    crawler = get_crawler(settings_dict=settings_dict(ROBOTSTXT_USER_AGENT="crawler"))
    mw = UserAgentMiddleware.from_crawler(crawler)
    request = Request("http://a.example/robots.txt")
    mw.process_request(request)
    assert crawler.settings["ROBOTSTXT_USER_AGENT"] == "crawler"
    assert user_agent(request) != "crawler"
