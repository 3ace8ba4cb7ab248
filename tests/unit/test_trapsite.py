"""The trap site over real HTTP on loopback: each host's trap behaves as issue 26
describes, and classify() and real_pages() agree with what the site serves."""

from __future__ import annotations

import datetime
import html
import re
import urllib.error
import urllib.request
from collections import deque
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import pytest

from tests.trappages import ADVERTS
from tests.traproutes import SCALE_VARIABLE, scale, tree
from tests.trapsite import KINDS, classify, real_pages, running_trap_site, seeds

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.trapsite import RunningTrapSite

CALENDAR, SESSIONS, PATHS, FACETS, SOFT404, MIRRORS, PLAIN = range(7)
_HREF = re.compile(r'href="([^"]*)"')
_PARAGRAPHS = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_TIME = re.compile(r'<span class="time">[^<]*</span>')
_ADVERT = re.compile(r'<aside class="advert">[^<]*</aside>')
_SESSION = re.compile(r"(;jsessionid=[0-9a-f]+|\?(PHPSESSID|sid|visit)=[0-9a-f]+)$")
# Bounds on the crawls these tests make over HTTP.
MONTHS_FOLLOWED = 24
PAGES_PER_HOST = 30


@pytest.fixture(scope="module")
def site() -> Iterator[RunningTrapSite]:
    with running_trap_site() as running:
        yield running


def fetch(url: str) -> tuple[int, str]:
    """Status and body of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback)
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode("utf-8")


def hrefs(body: str) -> list[str]:
    return [html.unescape(href) for href in _HREF.findall(body)]


def text(body: str) -> list[str]:
    """The paragraphs of a page, which carry its text."""
    return _PARAGRAPHS.findall(body)


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_seeds_are_each_hosts_root(site: RunningTrapSite) -> None:
    assert site.seeds == seeds(site.port)
    assert site.seeds[0] == f"http://127.0.0.2:{site.port}/"
    assert site.seeds[6] == f"http://127.0.0.8:{site.port}/"
    assert len(site.seeds) == len(KINDS) == 7


def test_calendar_links_forward_month_after_month(site: RunningTrapSite) -> None:
    today = datetime.datetime.now(datetime.UTC).date()
    _, index = fetch(site.url(CALENDAR, "/calendar/"))
    month = f"/calendar/{today.year:04d}/{today.month:02d}/"
    assert month in hrefs(index)
    for _ in range(MONTHS_FOLLOWED):
        status, body = fetch(site.url(CALENDAR, month))
        assert status == 200
        later = [h for h in hrefs(body) if h.startswith("/calendar/") and h > month]
        month = min(h for h in later if h.count("/") == 4)
    total = today.year * 12 + today.month - 1 + MONTHS_FOLLOWED
    assert month == f"/calendar/{total // 12:04d}/{total % 12 + 1:02d}/"
    assert classify(CALENDAR, month) == "trap"


def test_calendar_month_has_three_day_pages(site: RunningTrapSite) -> None:
    _, body = fetch(site.url(CALENDAR, "/calendar/2031/02/"))
    days = [
        h for h in hrefs(body) if h.startswith("/calendar/2031/02/") and len(h) > 18
    ]
    assert len(days) == 3
    assert all(fetch(site.url(CALENDAR, day))[0] == 200 for day in days)


def test_sessions_give_every_visit_new_urls(site: RunningTrapSite) -> None:
    first = hrefs(fetch(site.url(SESSIONS, "/s/1.html"))[1])
    second = hrefs(fetch(site.url(SESSIONS, "/s/1.html"))[1])
    assert not set(first) & set(second)
    assert all(_SESSION.search(href) for href in first + second)
    assert [_SESSION.sub("", h) for h in first] == [_SESSION.sub("", h) for h in second]
    # One spelling a page, each of the four on some page of the tree.
    spellings = {_SESSION.search(h)[0][:4] for h in first}  # type: ignore[index]
    assert len(spellings) == 1
    every = {
        _SESSION.search(h)[0][:4]  # type: ignore[index]
        for page in ("/", "/s/1.html", "/s/2.html", "/s/3.html")
        for h in hrefs(fetch(site.url(SESSIONS, page))[1])
    }
    assert every == {";jse", "?PHP", "?sid", "?vis"}


def test_a_session_url_shows_its_page(site: RunningTrapSite) -> None:
    link = hrefs(fetch(site.url(SESSIONS, "/"))[1])[0]
    status, body = fetch(site.url(SESSIONS, link))
    assert status == 200
    assert text(body) == text(fetch(site.url(SESSIONS, _SESSION.sub("", link)))[1])
    assert classify(SESSIONS, link) == "trap"
    assert classify(SESSIONS, _SESSION.sub("", link)) == "real"


def test_docs_paths_grow_without_end(site: RunningTrapSite) -> None:
    status, docs = fetch(site.url(PATHS, "/docs/"))
    assert status == 200
    assert {"a/", "b/"} <= set(hrefs(docs))
    deep = "/docs/" + "a/b/" * 20
    status, body = fetch(site.url(PATHS, deep))
    assert (status, body) == (200, docs)
    assert classify(PATHS, deep) == "trap"
    assert classify(PATHS, "/docs/") == "real"


def test_facets_answer_in_any_order(site: RunningTrapSite) -> None:
    listing = hrefs(fetch(site.url(FACETS, "/shop/"))[1])
    facet = next(h for h in listing if "?" in h)
    one_way = "/shop/c/2/?sort=name&color=blue&page=7"
    other_way = "/shop/c/2/?page=7&color=blue&sort=name"
    for target in (facet, one_way, other_way):
        assert fetch(site.url(FACETS, target))[0] == 200
        assert classify(FACETS, target) == "trap"
    assert fetch(site.url(FACETS, "/shop/?color=purple"))[0] == 404


def test_soft404_answers_200_for_what_is_not_there(site: RunningTrapSite) -> None:
    status, body = fetch(site.url(SOFT404, "/no/such/page.html"))
    assert status == 200
    assert "Sorry, the page /no/such/page.html was not found" in body
    assert classify(SOFT404, "/no/such/page.html") == "dead"


def test_print_mirrors_repeat_the_text_under_another_header(
    site: RunningTrapSite,
) -> None:
    _, page = fetch(site.url(MIRRORS, "/page/3.html"))
    links = hrefs(page)
    assert {"/page/3.html?print=1", "/print/page/3.html"} <= set(links)
    for mirror in ("/page/3.html?print=1", "/print/page/3.html"):
        status, body = fetch(site.url(MIRRORS, mirror))
        assert status == 200
        assert text(body)[1:] == text(page)
        assert body.partition("<p>")[0] != page.partition("<p>")[0]


def test_ticking_page_changes_only_its_time(site: RunningTrapSite) -> None:
    _, first = fetch(site.url(MIRRORS, "/ticking.html"))
    _, second = fetch(site.url(MIRRORS, "/ticking.html"))
    assert first != second
    assert _TIME.sub("", first) == _TIME.sub("", second)


def test_advert_page_changes_only_its_advert(site: RunningTrapSite) -> None:
    bodies = [fetch(site.url(MIRRORS, "/advert.html"))[1] for _ in range(20)]
    adverts = {_ADVERT.search(body)[0] for body in bodies}  # type: ignore[index]
    assert 1 < len(adverts) <= len(ADVERTS)
    assert len({_ADVERT.sub("", body) for body in bodies}) == 1


def test_unknown_urls_are_404_on_ordinary_hosts(site: RunningTrapSite) -> None:
    for host, target in [
        (PLAIN, "/p/40.html"),
        (PLAIN, "/p/1.html?x=1"),
        (CALENDAR, "/calendar/2026/13/"),
        (CALENDAR, "/calendar/2026/11/02/"),
        (MIRRORS, "/print/ticking.html"),
        (SESSIONS, "/s/1.html?other=1"),
        (SESSIONS, "/s/1.html;other=1"),
    ]:
        assert fetch(site.url(host, target))[0] == 404
        assert classify(host, target) == "dead"


def crawl(site: RunningTrapSite, host: int, limit: int) -> dict[str, tuple[int, str]]:
    """Breadth first over HTTP from the host's root: path -> (status, body) of at
    most *limit* pages."""
    found: dict[str, tuple[int, str]] = {}
    queue = deque(["/"])
    while queue and len(found) < limit:
        target = queue.popleft()
        if target in found:
            continue
        found[target] = fetch(site.url(host, target))
        queue += [
            path_of(urljoin(site.url(host, target), h)) for h in hrefs(found[target][1])
        ]
    return found


@pytest.mark.parametrize("host", range(7), ids=KINDS)
def test_classify_agrees_with_what_was_served(site: RunningTrapSite, host: int) -> None:
    for target, (status, body) in crawl(site, host, PAGES_PER_HOST).items():
        kind = classify(host, target)
        if kind != "dead":
            assert status == 200, target
        elif host == SOFT404:
            assert status == 200, target
            assert f"Sorry, the page {target.partition('?')[0]} was not found" in body
        else:
            assert status == 404, target


def test_plain_host_has_no_traps(site: RunningTrapSite) -> None:
    served = crawl(site, PLAIN, 100)
    assert len(served) == 40
    assert {classify(PLAIN, target) for target in served} == {"real"}


def test_every_real_page_answers_200(site: RunningTrapSite) -> None:
    pages = real_pages(3)
    assert {host for host, _ in pages} == set(range(7))
    for host, path in sorted(pages):
        status, body = fetch(site.url(host, path))
        assert status == 200, (host, path)
        assert "Sorry" not in body


def canonical(target: str) -> str:
    """The URL without its session id, as a canonicalizing crawler has it."""
    return _SESSION.sub("", target)


@pytest.mark.parametrize("host", range(7), ids=KINDS)
def test_real_pages_are_those_a_crawl_finds(site: RunningTrapSite, host: int) -> None:
    depth_limit = 2
    depths = {"/": 0}
    queue = deque(["/"])
    while queue:
        target = queue.popleft()
        if depths[target] == depth_limit:
            continue
        for href in hrefs(fetch(site.url(host, target))[1]):
            found = canonical(path_of(urljoin(site.url(host, target), href)))
            if found not in depths:
                depths[found] = depths[target] + 1
                queue.append(found)
    real = {(host, t) for t in depths if classify(host, t) == "real"}
    assert real == {page for page in real_pages(depth_limit) if page[0] == host}


def test_the_scale_multiplies_every_tree_and_nothing_else(monkeypatch) -> None:
    one = {kind: len(tree(KINDS.index(kind))) for kind in KINDS}
    monkeypatch.setenv(SCALE_VARIABLE, "10")
    assert scale() == 10
    ten = {kind: len(tree(KINDS.index(kind))) for kind in KINDS}
    assert {kind: ten[kind] - 1 for kind in KINDS} == {
        kind: 10 * (one[kind] - 1) for kind in KINDS
    }
    assert classify(KINDS.index("plain"), "/p/390.html") == "real"
    monkeypatch.setenv(SCALE_VARIABLE, "zero")
    assert scale() == 1  # not a number: the usual site
