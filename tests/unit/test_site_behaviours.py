"""The test site's fault items: robots.txt ``fail:N``, hosts ``busy:S`` and ``refuse:S``.

The parsing and the answers are checked on a ``Site`` object (no network); refusing
connections needs the real socket, so that one check starts the site.
"""

from __future__ import annotations

import socket
import time

import pytest

from tests.servers import running_site, wait_for
from tests.site import (
    HANG,
    Behaviour,
    Request,
    RobotsSpec,
    Site,
    SiteSpec,
    parse_behaviour,
    parse_header,
    parse_robots,
)

SPEC = SiteSpec(hosts=3, pages=5, links=2, cross=0.2, seed=1, port=8080)
GET_ROBOTS = Request("GET", "/robots.txt", True, {})
GET_PAGE = Request("GET", "/p/1.html", True, {})


@pytest.mark.parametrize(
    ("item", "fail", "status"),
    [("fail:2", 2, 503), ("fail:3,429", 3, 429), ("fail:1,hang", 1, 0)],
)
def test_robots_fail_items_parse(item: str, fail: int, status: int) -> None:
    index, spec = parse_robots(f"1={item};disallow:/p/1.html")
    assert index == 1
    assert (spec.fail, spec.fail_status) == (fail, status)
    assert "Disallow: /p/1.html" in spec.rules


@pytest.mark.parametrize("item", ["fail:0", "fail:x", "fail:2,200", "fail:2,slow"])
def test_bad_robots_fail_items_are_refused(item: str) -> None:
    with pytest.raises(ValueError, match="fail"):
        parse_robots(f"0={item}")


def test_robots_fails_its_first_fetches_then_serves_the_file() -> None:
    site = Site(SPEC, 0, 0, None, robots={0: RobotsSpec("User-agent: *\n", fail=2)})
    statuses = [site.respond(0, GET_ROBOTS).status for _ in range(4)]
    assert statuses == [503, 503, 200, 200]
    assert site.respond(0, GET_ROBOTS).body == b"User-agent: *\n"


def test_robots_fail_with_429_and_with_silence() -> None:
    robots = {
        0: RobotsSpec(fail=1, fail_status=429),
        1: RobotsSpec(fail=2, fail_status=0),
    }
    site = Site(SPEC, 0, 0, None, robots=robots)
    assert [site.respond(0, GET_ROBOTS).status for _ in range(2)] == [429, 200]
    answers = [site.respond(1, GET_ROBOTS) for _ in range(3)]
    assert answers[0] is HANG
    assert answers[1] is HANG
    assert answers[2].status == 200


@pytest.mark.parametrize(
    ("item", "field"), [("busy:20", "busy"), ("refuse:2.5", "refuse")]
)
def test_busy_and_refuse_parse_as_seconds(item: str, field: str) -> None:
    index, behaviour = parse_behaviour(f"2={item}")
    assert index == 2
    assert getattr(behaviour, field) == float(item.partition(":")[2])


@pytest.mark.parametrize("item", ["busy:-1", "busy:x", "refuse:inf", "refuse"])
def test_bad_busy_and_refuse_are_refused(item: str) -> None:
    with pytest.raises(ValueError, match=r"busy|refuse"):
        parse_behaviour(f"0={item}")


def test_a_busy_host_answers_503_with_the_seconds_left_then_normally() -> None:
    site = Site(SPEC, 0, 0, None, behave={1: Behaviour(busy=30)})
    page = site.respond(1, GET_PAGE)
    answer, _wait = site.misbehave(1, GET_PAGE, page)
    assert answer.status == 503
    assert 29 <= int(dict(answer.headers)["Retry-After"]) <= 30
    robots, _wait = site.misbehave(1, GET_ROBOTS, site.respond(1, GET_ROBOTS))
    assert robots.status == 404  # robots.txt follows --robots, never --behave
    site.started -= 31  # as if the 30 s had passed
    assert site.misbehave(1, GET_PAGE, page)[0].status == 200


def _connects(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except ConnectionRefusedError:
        return False


@pytest.mark.integration
def test_a_refusing_host_refuses_connections_then_serves() -> None:
    with running_site(hosts=2, pages=3, behave={1: "refuse:3"}) as site:
        started = time.monotonic()
        assert _connects("127.0.0.2", site.spec.port)
        assert not _connects("127.0.0.3", site.spec.port)
        assert wait_for(lambda: _connects("127.0.0.3", site.spec.port), timeout=10)
        assert time.monotonic() - started > 1.0


@pytest.mark.parametrize(
    ("text", "pages"),
    [
        ("2=1,3|Content-Usage: train-ai=n", {1, 3}),
        ("2=*|Content-Usage: train-ai=n", None),
    ],
)
def test_header_items_parse(text: str, pages: set[int] | None) -> None:
    index, header = parse_header(text)
    assert index == 2
    assert header.pages == (None if pages is None else frozenset(pages))
    assert (header.name, header.value) == ("Content-Usage", "train-ai=n")


@pytest.mark.parametrize(
    "text", ["x=1|A: b", "0=1", "0=1|no colon", "0=a|A: b", "0=1|: b", "0=1,|A: b"]
)
def test_bad_header_items_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--header"):
        parse_header(text)


def test_pages_send_their_headers_and_others_none() -> None:
    site = Site(SPEC, 0, 0, None, headers=[parse_header("0=1|Content-Usage: search=y")])
    assert ("Content-Usage", "search=y") in site.respond(0, GET_PAGE).headers
    other = Request("GET", "/p/2.html", True, {})
    assert not site.respond(0, other).headers
    assert not site.respond(1, GET_PAGE).headers
    assert not site.respond(0, GET_ROBOTS).headers
