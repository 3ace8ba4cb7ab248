"""Unit tests for crawler/policy/traps.py and trapcalendar.py: spider traps are cut,
real documentation pages never are, and no rule raises on hostile input."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote_plus, urljoin, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from bench import nginxsites, sitecorpora
from crawler.policy.sessionids import session_keys
from crawler.policy.trapcalendar import dates_named
from crawler.policy.traps import (
    TrapsConfig,
    calendar_walk,
    canonical_url,
    is_session_param,
    matches_soft_404,
    over_budget,
    query_variant_key,
    soft_404_probe_url,
    soft_404_signature,
    too_many_variants,
    trap_of,
)
from tests.unit.properties import PROPERTY

if TYPE_CHECKING:
    from collections.abc import Callable

CONFIG = TrapsConfig()
TODAY = date(2026, 11, 28)  # + 366 days: 2027-11-29 is the last date let through


def settings(**values: object) -> Settings:
    result = Settings()
    result.setmodule("crawler.defaults", priority="default")
    result.setdict(values, priority="cmdline")
    return result


# --- Settings -------------------------------------------------------------------------


def test_the_settings_default_to_every_rule_on_but_the_host_budget():
    assert TrapsConfig.from_settings(settings()) == TrapsConfig(
        canonicalize=True,
        session_params=(),
        max_path_repeats=2,
        calendar_horizon_days=366,
        calendar_earliest_year=1990,
        max_query_variants=50,
        host_max_pages=None,
        soft_404=True,
    )


def test_settings_given_as_text_are_read():
    config = TrapsConfig.from_settings(
        settings(
            TRAPS_SESSION_PARAMS="Visit,token",
            FRONTIER_HOST_MAX_PAGES="1000",
            TRAPS_CANONICALIZE="false",
        )
    )
    assert config.session_params == ("visit", "token")
    assert config.host_max_pages == 1000
    assert not config.canonicalize


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TRAPS_CANONICALIZE", "maybe"),
        ("TRAPS_SESSION_PARAMS", 5),
        ("TRAPS_MAX_PATH_REPEATS", -1),
        ("TRAPS_MAX_PATH_REPEATS", 2.5),
        ("TRAPS_CALENDAR_HORIZON_DAYS", "a year"),
        ("TRAPS_CALENDAR_EARLIEST_YEAR", -5),
        ("TRAPS_MAX_QUERY_VARIANTS", -1),
        ("FRONTIER_HOST_MAX_PAGES", 0),
        ("TRAPS_SOFT_404", 2),
    ],
)
def test_a_bad_setting_is_named_in_one_line(name, value):
    with pytest.raises(ValueError, match=f"^{name} ") as raised:
        TrapsConfig.from_settings(settings(**{name: value}))
    assert "\n" not in str(raised.value)


# --- Canonical URLs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://a.example/p?sid=1&q=x", "http://a.example/p?q=x"),
        ("http://a.example/p?JSESSIONID=AB&q=x", "http://a.example/p?q=x"),
        ("http://a.example/p?PhpSessId=AB", "http://a.example/p"),
        ("http://a.example/p?session_id=1&sessionid=2", "http://a.example/p"),
        ("http://a.example/p?ASPSESSIONIDQADCTQRA=X&k=1", "http://a.example/p?k=1"),
        ("http://a.example/p?CFID=1&CFTOKEN=2&zenid=3&osCsid=4", "http://a.example/p"),
        ("http://a.example/p?s=shoes", "http://a.example/p?s=shoes"),
        ("http://a.example/p;jsessionid=0A1B?q=x", "http://a.example/p?q=x"),
        ("http://a.example/d;JSESSIONID=0A1B/p.jsp", "http://a.example/d/p.jsp"),
        (
            "http://a.example/(S(lit3py55t21z5v55vlm25s55))/shop/p.aspx",
            "http://a.example/shop/p.aspx",
        ),
        (
            "http://a.example/app/(X(1)S(lit3py55t21z5v55vlm25s55))/p.aspx?k=1",
            "http://a.example/app/p.aspx?k=1",
        ),
        ("http://a.example/(S(short))/p.aspx", "http://a.example/(S(short))/p.aspx"),
        ("http://a.example/p?b=2&a=9&c=1", "http://a.example/p?a=9&b=2&c=1"),
        ("http://a.example/p?a=2&b=0&a=1", "http://a.example/p?a=2&a=1&b=0"),
        ("http://a.example/p#part", "http://a.example/p"),
        # The scheme, host and path stay as written (Scrapy's Request encodes
        # them); only the query is rewritten.
        ("HTTP://A.Example/x/./y/../z", "HTTP://A.Example/x/./y/../z"),
        ("http://a.example/caf\u00e9?q=a b", "http://a.example/caf\u00e9?q=a+b"),
        ("http://a.example/%7euser?x=%2f", "http://a.example/%7euser?x=%2F"),
        ("http://a.example/Case/Kept/", "http://a.example/Case/Kept/"),
        ("http://a.example:80/d/index.html", "http://a.example:80/d/index.html"),
        ("http://a.example/a%2Fb%3f", "http://a.example/a%2Fb%3f"),
        ("http://a.example/P;sid=1;x=2", "http://a.example/P;x=2"),
    ],
)
def test_canonical_url(url, canonical):
    assert canonical_url(url, CONFIG) == canonical


def test_session_params_of_the_setting_are_dropped_too():
    config = TrapsConfig(session_params=("visit",))
    assert canonical_url("http://a.example/?Visit=9&q=1", config) == (
        "http://a.example/?q=1"
    )


def test_canonicalization_off_leaves_the_url_as_it_came():
    config = TrapsConfig(canonicalize=False)
    url = "http://A.example/p?sid=1#x"
    assert canonical_url(url, config) == url


@pytest.mark.parametrize("url", ["http://[::1/p", "http://[zz]/", "", "::::"])
def test_an_unparseable_url_comes_back_unchanged(url):
    assert canonical_url(url, CONFIG) == url


# --- Repeated path segments -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/a/b/a/b/a/b/", "repeated_path"),
        ("/a/b/a/b/", None),
        ("/x/a/a/a", "repeated_path"),
        ("/x/a/a/y", None),
        ("/a/b/c/a/b/c/a/b/c/", "repeated_path"),
        ("/a/b/c/d/a/b/c/d/a/b/c/d/", None),  # runs longer than 3 are not looked for
        ("/a/x/a/y/a/z/a/", "repeated_path"),  # four times apart
        ("/a/x/a/y/a/", None),  # three times apart
        ("/a//a//a/", "repeated_path"),  # empty segments skipped
        ("/docs/en/docs/en/index.html", None),
        ("/", None),
    ],
)
def test_repeated_path_segments(path, rule):
    assert trap_of(f"http://a.example{path}", CONFIG, TODAY) == rule


def test_repeats_count_against_the_setting():
    config = TrapsConfig(max_path_repeats=3)
    assert trap_of("http://a.example/a/b/a/b/a/b/", config, TODAY) is None
    assert trap_of("http://a.example/a/a/a/a", config, TODAY) == "repeated_path"


def test_repeated_path_off_lets_any_path_through():
    config = TrapsConfig(max_path_repeats=0)
    assert trap_of("http://a.example/a/a/a/a/a/a/a", config, TODAY) is None


def test_a_repeated_query_or_host_is_no_repeated_path():
    url = "http://a.a.a.a.example/p?a=/a/a/a/a/a"
    assert trap_of(url, TrapsConfig(calendar_horizon_days=0), TODAY) is None


# --- Calendars ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trap",
    [
        "/2031/05/",
        "/2031/5/12/",
        "/2031-05-12",
        "/events-2031-05.html",
        "/?date=2031-05-12",
        "/?year=2031&month=5",
        "/?Y=2031&M=05&D=1",
        "/?month=2031-05",
        "/calendar/203105",
        "/cal/20310512.html",
        "/?d=20310512",
        "/2027/12/",  # the month starts after 2027-11-29
        "/1989/12/31/",
        "/news/1001/01/",
        "/2031/02/30/",  # no such day: the month alone is read, 2031-02
    ],
)
def test_a_date_beyond_the_horizon_or_before_the_earliest_year_is_a_trap(trap):
    assert trap_of(f"http://a.example{trap}", CONFIG, TODAY) == "calendar"


@pytest.mark.parametrize(
    "page",
    [
        "/2027/11/",
        "/2027-11-29",
        "/2026/11/28/today.html",
        "/1990/01/",
        "/?year=2031",
        "/2031/",
        "/docs/3000/",
        "/3.11/",
        "/15/",
        "/v2.7.18/",
        "/2031.05.12/",
        "/item/203105",  # six digits, no calendar word before them
        "/?id=20310512",
        "/img/1024-1.png",
        "/rfc2616-10.html",
        "/2031/13/",
        "/3031/05/",
    ],
)
def test_what_names_no_date_out_of_range_is_no_calendar(page):
    assert trap_of(f"http://a.example{page}", CONFIG, TODAY) is None


def test_the_horizon_and_the_earliest_year_follow_the_settings():
    config = TrapsConfig(calendar_horizon_days=30, calendar_earliest_year=2020)
    assert trap_of("http://a.example/2027/01/", config, TODAY) == "calendar"
    assert trap_of("http://a.example/2026/12/", config, TODAY) is None
    assert trap_of("http://a.example/2019/12/", config, TODAY) == "calendar"


def test_calendar_off_lets_any_date_through():
    config = TrapsConfig(calendar_horizon_days=0)
    assert trap_of("http://a.example/2999/12/", config, TODAY) is None
    assert trap_of("http://a.example/1000/01/", config, TODAY) is None


def test_the_first_rule_that_cuts_names_the_trap():
    assert trap_of("http://a.example/2999/01/2999/01/2999/01/", CONFIG, TODAY) == (
        "repeated_path"
    )


# --- Query variants and the host budget -----------------------------------------------


def test_query_variants_are_counted_per_host_and_path():
    key = query_variant_key("http://A.Example:8080/list?page=2#top")
    assert key == "a.example:8080/list"
    assert query_variant_key("http://a.example:8080/list?page=3") == key
    assert query_variant_key("http://a.example") == "a.example/"
    assert query_variant_key("http://[::1/") == "http://[::1/"


def test_the_variant_over_the_limit_is_cut():
    assert not too_many_variants(49, CONFIG)
    assert too_many_variants(50, CONFIG)
    assert not too_many_variants(10**6, TrapsConfig(max_query_variants=0))


def test_the_host_budget_is_off_by_default_and_cuts_at_its_limit():
    assert not over_budget(10**9, CONFIG)
    budget = TrapsConfig(host_max_pages=100)
    assert not over_budget(99, budget)
    assert over_budget(100, budget)


# --- Soft 404s ------------------------------------------------------------------------


def test_the_probe_is_a_page_of_the_origin_built_from_the_token():
    assert soft_404_probe_url("https://a.example/", "q7x") == (
        "https://a.example/q7x-no-such-page-q7x.html"
    )
    assert soft_404_probe_url("http://a.example", "a/b c") == (
        "http://a.example/a%2Fb%20c-no-such-page-a%2Fb%20c.html"
    )


NOT_FOUND = (
    "<html><body><h1>Sorry</h1><p>We could not find {path}.</p>"
    "<p>Served at {time} by node {node}</p></body></html>"
)


def _not_found(path: str, time: str, node: int) -> bytes:
    return NOT_FOUND.format(path=path, time=time, node=node).encode()


def test_not_found_pages_share_a_signature_whatever_they_echo():
    probe = soft_404_signature(
        200, _not_found("/q7x-no-such-page-q7x.html", "12:00:01", 3)
    )
    later = soft_404_signature(200, _not_found("/shop/item/9", "2026-11-28 13:45", 12))
    assert probe is not None
    assert matches_soft_404(probe, later)


def test_an_echoed_file_name_is_removed_when_the_url_is_given():
    page = b"<p>No page called old-news.html here</p>"
    other = b"<p>No page called q7x-probe.html here</p>"
    assert soft_404_signature(
        200, page, url="http://a.example/a/old-news.html"
    ) == soft_404_signature(200, other, url="http://a.example/q7x-probe.html")


def test_a_real_page_does_not_match_the_not_found_page():
    probe = soft_404_signature(200, _not_found("/q7x", "12:00", 1))
    page = soft_404_signature(200, b"<html><body><h1>Shoes</h1>Red shoes</body>")
    assert not matches_soft_404(probe, page)


@pytest.mark.parametrize("status", [404, 410, 301, 500])
def test_only_a_200_has_a_signature(status):
    assert soft_404_signature(status, b"not found") is None
    assert not matches_soft_404(None, soft_404_signature(status, b"not found"))


# --- Real pages are never cut ---------------------------------------------------------


HREF = re.compile(rb'href="([^"]*)"')


def _corpus_urls(root: Path, origin: str) -> list[str]:
    """Every file and folder of *root* as nginx serves it at *origin*, and every
    link of its HTML pages (resolved against the page, as a crawl meets them)."""
    urls = [origin + "/"]
    for path in sorted(root.rglob("*")):
        url = f"{origin}/{quote(path.relative_to(root).as_posix())}"
        urls.append(url + "/" if path.is_dir() else url)
    return urls + [link for _, link in _corpus_links(root, origin)]


def _corpus_links(root: Path, origin: str) -> list[tuple[str, str]]:
    """(page, link) of every link of *root*'s HTML pages served at *origin*."""
    found = []
    for path in sorted(root.rglob("*.htm*")):
        url = f"{origin}/{quote(path.relative_to(root).as_posix())}"
        if path.suffix in (".html", ".htm") and path.is_file():
            for link in HREF.findall(path.read_bytes()):
                found.append((url, urljoin(url, link.decode("utf-8", "replace"))))
    return found


def real_documentation_urls(
    corpus: Callable[[Path, str], list[Any]] = _corpus_urls,
) -> list[Any]:
    """The URLs of bench.realsites' Debian documentation packages, served as
    bench.nginxsites serves them (127.0.0.31, .32, ... on its port); or what
    *corpus* gives of each."""
    urls = []
    for index, (name, folder, package) in enumerate(nginxsites.DEFAULT_CORPORA):
        root = Path(folder)
        if not root.is_dir():
            pytest.fail(
                f"corpus {name} is missing: {folder} (as root, apt-get install -y "
                f"{package})"
            )
        origin = f"http://127.0.0.{nginxsites.FIRST_ADDRESS + index}:{nginxsites.PORT}"
        urls += corpus(root, origin)
    return sorted(set(urls))


def synthetic_site_urls(
    root: Path, corpus: Callable[[Path, str], list[Any]] = _corpus_urls
) -> list[Any]:
    """The pages of bench.sitecorpora's synthetic sites, written as the benchmark
    writes them."""
    origins = [
        f"http://127.0.0.{50 + i}:8931" for i in range(len(sitecorpora.SYNTHETIC))
    ]
    elsewhere = sitecorpora.Elsewhere(
        homes=[origin + "/" for origin in origins],
        portal_pages=sitecorpora.portal_pages(origins[0]),
    )
    urls = []
    for site, origin in zip(sitecorpora.SYNTHETIC, origins, strict=True):
        sitecorpora.write_site(site, root / site.name, origin, elsewhere)
        urls += corpus(root / site.name, origin)
    return urls


def test_no_url_only_rule_cuts_a_real_documentation_page(tmp_path):
    urls = real_documentation_urls() + synthetic_site_urls(tmp_path)
    # The controls: the corpora were walked, and their links name real dates (blog
    # posts, a source timeline), so the calendar rule was put to the test.
    assert len(urls) > 30000
    assert sum(any(dates_named(*_path_and_query(url))) for url in urls) > 10
    cut = {url: trap_of(canonical_url(url, CONFIG), CONFIG, TODAY) for url in urls}
    assert {url: rule for url, rule in cut.items() if rule} == {}


def test_no_calendar_walk_cuts_a_real_documentation_link(tmp_path):
    links = real_documentation_urls(_corpus_links) + synthetic_site_urls(
        tmp_path, _corpus_links
    )
    # The control: links name dates (blog posts, a source timeline); their pages
    # are the undated indexes that link them, which may link any month.
    dated = [link for _, link in links if any(dates_named(*_path_and_query(link)))]
    assert len(dated) > 10
    cut = [(p, link) for p, link in links if calendar_walk(p, link, CONFIG, TODAY)]
    assert cut == []


def test_no_session_key_is_found_on_a_real_documentation_page(tmp_path):
    links = real_documentation_urls(_corpus_links) + synthetic_site_urls(
        tmp_path, _corpus_links
    )
    by_page: defaultdict[str, list[str]] = defaultdict(list)
    for page, link in links:
        by_page[page].append(link)
    assert len(by_page) > 1000  # the control: the corpora's pages were read
    found = {page: session_keys(page, hrefs) for page, hrefs in by_page.items()}
    assert {page: keys for page, keys in found.items() if keys} == {}


def walk(page: str, link: str, near: int | None = 0) -> str | None:
    config = TrapsConfig(calendar_near_months=near)
    return calendar_walk(
        f"http://a.example{page}", f"http://a.example{link}", config, TODAY
    )


def test_a_calendar_chain_is_cut_as_it_leaves_today():
    assert TrapsConfig().calendar_near_months == 0  # the default
    assert walk("/calendar/", "/calendar/2019/03/") is None  # an index links any month
    assert walk("/calendar/2026/11/", "/calendar/2026/10/") == "calendar"
    assert walk("/calendar/2026/11/", "/calendar/2026/12/") == "calendar"
    assert walk("/calendar/2026/10/", "/calendar/2026/11/") is None  # back toward today
    assert walk("/2019/03/", "/2019/03/12/a-post/") is None  # within the page's month
    assert walk("/2019/03/12/a-post/", "/2019/02/27/older/") == "calendar"
    assert walk("/?date=2026-10-01", "/?date=2026-09-01") == "calendar"
    assert walk("/calendar/2026/10/", "/calendar/2026/09/", near=None) is None


def test_a_chain_of_months_is_followed_near_months_from_today():
    assert walk("/calendar/2026/11/", "/calendar/2026/10/", near=1) is None
    assert walk("/calendar/2026/11/", "/calendar/2026/12/", near=1) is None
    assert walk("/calendar/2026/10/", "/calendar/2026/09/", near=1) == "calendar"
    assert walk("/calendar/2026/12/", "/calendar/2027/01/", near=1) == "calendar"
    assert walk("/calendar/2026/10/", "/calendar/2026/09/", near=2) is None


def test_a_chain_of_days_is_measured_in_days():
    today = TODAY.isoformat()
    tomorrow = (TODAY + timedelta(days=1)).isoformat()
    yesterday = (TODAY - timedelta(days=1)).isoformat()
    in_40_days = (TODAY + timedelta(days=40)).isoformat()
    in_41_days = (TODAY + timedelta(days=41)).isoformat()
    # A day calendar's "next day" and "previous day" leave today at once...
    assert walk(f"/events?date={today}", f"/events?date={tomorrow}") == "calendar"
    assert walk(f"/events?date={today}", f"/events?date={yesterday}") == "calendar"
    assert walk(f"/day/{tomorrow}", f"/day/{today}") is None  # back toward today
    # ...and walk NEAR_MONTHS x 30 days when allowed to, whatever the month.
    assert walk(f"/d/{today}", f"/d/{tomorrow}", near=1) is None
    assert walk(f"/d/{in_40_days}", f"/d/{in_41_days}", near=1) == "calendar"
    # A post's link to the post before it in its month walks away from today.
    assert walk("/2019/03/12/a-post/", "/2019/03/02/the-one-before/") == "calendar"
    assert walk("/2019/03/02/a-post/", "/2019/03/12/the-next/") is None


def _path_and_query(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.path, parts.query


# --- Hostile input --------------------------------------------------------------------


@PROPERTY
@given(url=st.text(max_size=300))
def test_no_rule_raises_on_any_text(url):
    canonical_url(url, CONFIG)
    trap_of(url, CONFIG, TODAY)
    query_variant_key(url)
    soft_404_signature(200, url.encode("utf-8", "surrogatepass"), url=url)


URL_PIECES = st.text(alphabet="0123456789/-?&=.;%#[]:ymdYMD", max_size=200)


@PROPERTY
@given(path=URL_PIECES, horizon=st.integers(0, 10**9), year=st.integers(0, 10**4))
def test_no_rule_raises_on_urls_made_of_dates_and_separators(path, horizon, year):
    config = TrapsConfig(calendar_horizon_days=horizon, calendar_earliest_year=year)
    assert trap_of(f"http://a.example/{path}", config, TODAY) in (
        None,
        "repeated_path",
        "calendar",
    )
    canonical_url(f"http://a.example/{path}", config)


@PROPERTY
@given(status=st.integers(100, 599), body=st.binary(max_size=500), url=st.text())
def test_a_signature_is_none_or_the_same_for_the_same_page(status, body, url):
    signature = soft_404_signature(status, body, url=url)
    assert signature == soft_404_signature(status, body, url=url)
    assert (signature is None) == (status != 200)


def test_a_hostile_path_of_many_segments_is_decided_in_one_pass():
    many = "/".join(f"s{n}" for n in range(200_000))
    assert trap_of(f"http://a.example/{many}", CONFIG, TODAY) is None
    assert trap_of(f"http://a.example/{many}/x/x/x", CONFIG, TODAY) == "repeated_path"


@PROPERTY
@given(
    url=st.builds(
        "{}://{}{}{}".format,
        st.sampled_from(["http", "https"]),
        st.text(alphabet="abcXYZ019.-", min_size=1, max_size=12),
        st.text(alphabet="abc/.%;=é~ 09", max_size=40),
        st.text(alphabet="ab?&=#%+é 19;", max_size=40),
    )
)
def test_canonical_url_is_idempotent(url):
    once = canonical_url(url, CONFIG)
    assert canonical_url(once, CONFIG) == once


KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=8)
VALUES = st.text(alphabet="abc12 %/é=", max_size=8)
SESSION_KEYS = st.sampled_from(
    ["jsessionid", "PHPSESSID", "Sid", "sessionid", "SESSION_ID",
     "ASPSESSIONIDQADCTQRA", "cfid", "CFTOKEN", "zenid", "osCsid"]
)  # fmt: skip


def _query(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(key)}={quote(value)}" for key, value in pairs)


def _keys_of(url: str) -> list[str]:
    return [key for key, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]


@PROPERTY
@given(
    kept=st.lists(st.tuples(KEYS, VALUES), max_size=6),
    session=st.lists(st.tuples(SESSION_KEYS, VALUES), min_size=1, max_size=3),
    order=st.randoms(use_true_random=False),
)
def test_session_params_never_survive_and_every_other_one_does(kept, session, order):
    kept = [(k, v) for k, v in kept if not is_session_param(k, CONFIG)]
    pairs = kept + session
    order.shuffle(pairs)
    url = canonical_url(f"http://a.example/p?{_query(pairs)}", CONFIG)
    keys = _keys_of(url)
    assert not {unquote_plus(k).lower() for k in keys} & {k.lower() for k, _ in session}
    assert sorted(keys) == sorted(key for key, _ in kept)
