"""The trap site's pure parts, without HTTP: what classify() says of URLs, the real
pages real_pages() finds, where trap pages lead, and how distinct the texts are."""

from __future__ import annotations

import datetime
import itertools
import random
import re
from urllib.parse import urljoin

from hypothesis import given
from hypothesis import strategies as st

from tests.traplinks import links
from tests.trappages import page_text, serve
from tests.traproutes import FACETS, KINDS, classify, real_paths
from tests.trapsite import real_pages
from tests.unit.properties import PROPERTY

CALENDAR, SESSIONS, PATHS, FACET_HOST, SOFT404, MIRRORS, PLAIN = range(7)
DAY = datetime.date(2026, 11, 28)
SHINGLE = 3
# Share of three-word shingles two real pages may have in common.
MOST_SHARED = 0.05


@PROPERTY
@given(host=st.integers(0, 6), target=st.text(max_size=80))
def test_classify_answers_every_url(host: int, target: str) -> None:
    assert classify(host, target) in ("real", "trap", "dead")
    assert classify(host, "/" + target) in ("real", "trap", "dead")


@PROPERTY
@given(year=st.integers(1, 9999), month=st.integers(1, 12))
def test_every_month_of_the_calendar_is_a_trap(year: int, month: int) -> None:
    assert classify(CALENDAR, f"/calendar/{year:04d}/{month:02d}/") == "trap"


def test_calendar_days_and_months_that_do_not_exist_are_dead() -> None:
    for target in ("/calendar/2026/13/", "/calendar/0000/05/", "/calendar/2026/1/"):
        assert classify(CALENDAR, target) == "dead"
    assert classify(CALENDAR, "/calendar/2026/11/14/") == "trap"
    assert classify(CALENDAR, "/calendar/2026/11/15/") == "dead"


@PROPERTY
@given(
    path=st.sampled_from(["/shop/", "/shop/c/1/", "/shop/c/3/"]),
    choice=st.lists(st.sampled_from(sorted(FACETS)), min_size=1, unique=True).flatmap(
        lambda keys: st.permutations([(k, FACETS[k][-1]) for k in keys])
    ),
)
def test_facets_in_any_order_and_combination_are_traps(
    path: str, choice: list[tuple[str, str]]
) -> None:
    query = "&".join(f"{key}={value}" for key, value in choice)
    assert classify(FACET_HOST, f"{path}?{query}") == "trap"
    assert classify(FACET_HOST, f"{path}?{query}&{choice[0][0]}=red") == "dead"


def test_session_ids_make_traps_of_real_pages() -> None:
    for decorated in (";jsessionid=ab12", "?PHPSESSID=ab12", "?sid=ab12"):
        assert classify(SESSIONS, f"/s/7.html{decorated}") == "trap"
        assert classify(SESSIONS, f"/s/99.html{decorated}") == "dead"
    assert classify(SESSIONS, "/s/7.html") == "real"
    assert classify(SESSIONS, "/s/7.html?sid=") == "dead"
    assert classify(SESSIONS, "/s/7.html;session=ab12") == "dead"
    assert classify(SESSIONS, "/s/7.html?sid=ab12&x=1") == "dead"


def test_a_fragment_does_not_change_what_a_url_is() -> None:
    assert classify(PLAIN, "/p/3.html#top") == "real"
    assert classify(MIRRORS, "/page/3.html?print=1#x") == "trap"


def test_real_pages_counts_match_the_issue() -> None:
    everything = real_pages(50)
    per_host = {h: {p for host, p in everything if host == h} for h in range(7)}
    assert len(per_host[SESSIONS]) == 20
    assert len(per_host[PLAIN]) == 40
    assert len([p for p in per_host[SOFT404] if p != "/"]) == 29
    assert len([p for p in per_host[FACET_HOST] if p.startswith("/shop/item/")]) == 30
    assert {"/ticking.html", "/advert.html", "/page/29.html"} <= per_host[MIRRORS]
    assert all(per_host[h] == set(real_paths(h)) for h in range(7))


def test_real_pages_grow_with_depth_from_the_roots() -> None:
    assert real_pages(0) == {(h, "/") for h in range(7)}
    one = real_pages(1)
    assert (PLAIN, "/p/1.html") in one
    assert (PLAIN, "/p/3.html") not in one
    assert (PLAIN, "/p/3.html") in real_pages(2)
    assert real_pages(0) < one < real_pages(2) < real_pages(3)


def trap_samples(host: int) -> list[str]:
    """Trap and dead pages of *host* reached by following links from its real pages,
    three rounds deep (bounded)."""
    frontier = sorted(real_paths(host))
    samples: list[str] = []
    for _ in range(3):
        reached = [
            urljoin(page, href) for page in frontier for href in links(host, page, DAY)
        ]
        frontier = [t for t in dict.fromkeys(reached) if classify(host, t) != "real"]
        samples += frontier[:50]
        frontier = frontier[:50]
    return samples


def test_trap_pages_lead_back_only_next_to_the_root() -> None:
    near_root = real_pages(1)
    for host in (CALENDAR, PATHS, FACET_HOST, SOFT404, MIRRORS):
        samples = trap_samples(host)
        assert samples, KINDS[host]
        for trap in samples:
            targets = {urljoin(trap, href) for href in links(host, trap, DAY)}
            real = {t for t in targets if classify(host, t) == "real"}
            assert {(host, t) for t in real} <= near_root, trap
            assert real or classify(host, trap) == "dead", trap


def shingles(host: int, path: str) -> set[tuple[str, ...]]:
    words = " ".join(page_text(host, path)).split()
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def test_real_pages_are_long_and_far_from_each_other() -> None:
    pages = sorted(real_pages(50))
    sets = [shingles(host, path) for host, path in pages]
    assert all(len(s) >= 300 for s in sets)
    for a, b in itertools.combinations(range(len(sets)), 2):
        shared = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
        assert shared < MOST_SHARED, (pages[a], pages[b])


def test_texts_are_the_same_from_run_to_run() -> None:
    first = serve(PLAIN, "/p/5.html", 0.0, random.Random(1)).html
    again = serve(PLAIN, "/p/5.html", 1e9, random.Random(2)).html
    assert first == again
    assert len(re.findall(r"\w+", first)) > 300


def test_no_real_pages_within_a_negative_depth() -> None:
    assert real_pages(-1) == set()
