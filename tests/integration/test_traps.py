"""Spider traps cut before they are queued, against the trap site on loopback.

tests/trapsite.py serves an endless calendar, links with fresh session ids, a
server whose relative links climb into themselves, and faceted search, each beside
real pages; ``real_pages`` and ``classify`` say, without HTTP, which pages a crawl
should find. What was fetched is read from the site's own request log.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.crawlstate.keys import CrawlKeys
from tests.integration.test_records import pages, rows_of
from tests.integration.test_timeouts import crawl
from tests.servers import running_site
from tests.traproutes import SCALE_VARIABLE
from tests.trapsite import classify, real_pages, running_trap_site

if TYPE_CHECKING:
    from pathlib import Path

    from tests.trapsite import RunningTrapSite

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")

HOSTS = 4  # calendar, sessions, paths, facets
CALENDAR, SESSIONS, PATHS, FACETS = range(HOSTS)
DEPTH = 17  # DEPTH_LIMIT's default
SESSION = re.compile(r"jsessionid|phpsessid|[?&](?:sid|visit)=", re.IGNORECASE)
MONTH = re.compile(r"^/calendar/(\d{4})/(\d{2})/")


def fetched(site: RunningTrapSite) -> set[tuple[int, str]]:
    """(host index, path and query) of every page the site was asked for."""
    hosts = {site.host(i): i for i in range(HOSTS)}
    return {
        (hosts[row["host"]], row["path"])
        for row in site.log()
        if row["path"] != "/robots.txt"
    }


async def crawl_traps(settings: Any, **overrides: Any) -> tuple[Any, set[Any]]:
    with running_trap_site(hosts=HOSTS) as site:
        values = settings(**{"DEPTH_LIMIT": DEPTH, **overrides})
        crawler = await crawl(values, site.seeds, scope="seed-hosts")
        return crawler, fetched(site)


def months_ahead(path: str, today: datetime.date) -> int:
    found = MONTH.match(path)
    assert found is not None, path
    return (int(found[1]) - today.year) * 12 + int(found[2]) - today.month


@deferred_f_from_coro_f
async def test_traps_are_cut_and_every_real_page_is_fetched(
    settings, redis, tmp_path: Path
):
    database = f"sqlite:///{tmp_path}/pages.db"
    today = datetime.datetime.now(datetime.UTC).date()
    # Near-duplicates not looked for (nothing learnt from them), so that the
    # repeated-path and query rules meet their URLs.
    crawler, seen = await crawl_traps(
        settings, RECORDS_DATABASE_URL=database, NEARDUP_MAX_DISTANCE=0
    )

    assert real_pages(DEPTH, hosts=HOSTS) <= seen  # no real page lost
    # The calendar's index links this month; its "previous" and "next" chain is
    # not followed (TRAPS_CALENDAR_NEAR_MONTHS is 0).
    ahead = {
        months_ahead(p, today)
        for host, p in seen
        if host == CALENDAR and MONTH.match(p)
    }
    assert ahead == {0}
    # Session ids never reach the site: the links' pages are asked for once each.
    assert not [p for host, p in seen if host == SESSIONS and SESSION.search(p)]
    # No path climbs into itself three times.
    assert not [p for host, p in seen if host == PATHS and "/a/b/a/b/a/b/" in p]
    # At most TRAPS_MAX_QUERY_VARIANTS (50) query strings a facet path.
    queries: defaultdict[str, set[str]] = defaultdict(set)
    for host, path in seen:
        if host == FACETS and "?" in path:
            base, _, query = path.partition("?")
            queries[base].add(query)
    assert queries
    assert max(len(found) for found in queries.values()) <= 50

    # Each host's cut links show in its traffic counters (scrapy frontier hosts).
    for index in (CALENDAR, PATHS, FACETS):
        key = KEYS.traffic(f"127.0.0.{2 + index}")
        assert int(redis.hget(key, "traps") or 0) > 0, index
    stats = crawler.stats
    for rule in ("calendar", "repeated_path", "query_variants"):
        assert stats.get_value(f"traps/{rule}", 0) > 0, rule
    assert stats.get_value("traps/canonicalized", 0) > 0
    # The sessions host's "?visit=" was told from its pages' links (the other
    # spellings have names): one key found.
    assert stats.get_value("traps/session_keys") == 1
    # What was cut is listed, once a URL, with the rule that cut it.
    rows = rows_of(database)
    cut = {url: row["error"] for url, row in rows.items() if row["fate"] == "trap"}
    assert set(cut.values()) == {"calendar", "repeated_path", "query_variants"}
    result = pages(database, "--fate", "trap", "--all-crawls", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(cut)


@deferred_f_from_coro_f
async def test_with_the_defences_off_the_traps_eat_the_crawl(settings):
    """The control: the same site, the rules off, a shallower limit (the traps are
    endless): the crawl fetches what the defences cut."""
    crawler, seen = await crawl_traps(
        settings,
        DEPTH_LIMIT=8,
        TRAPS_CANONICALIZE=False,
        TRAPS_MAX_PATH_REPEATS=0,
        TRAPS_CALENDAR_HORIZON_DAYS=0,
        TRAPS_MAX_QUERY_VARIANTS=0,
        TRAPS_CALENDAR_NEAR_MONTHS=None,
        NEARDUP_MAX_DISTANCE=0,
    )
    assert [p for host, p in seen if host == SESSIONS and SESSION.search(p)]
    assert [p for host, p in seen if host == PATHS and "/a/b/a/b/a/b/" in p]
    assert crawler.stats.get_value("traps/canonicalized") is None


SOFT_404 = 4  # the trap site's host that answers 200 for pages it does not have


@deferred_f_from_coro_f
@pytest.mark.parametrize("probe", [True, False])
async def test_a_soft_404_is_recorded_as_the_404_it_is(settings, tmp_path, probe):
    database = f"sqlite:///{tmp_path}/pages.db"
    with running_trap_site(hosts=SOFT_404 + 1) as site:
        values = settings(
            RECORDS_DATABASE_URL=database,
            TRAPS_SOFT_404=probe,
            TRAPS_DEAD_DIRECTORY_PAGES=0,  # every dead link fetched
        )
        crawler = await crawl(values, [site.seeds[SOFT_404]], scope="seed-hosts")
        asked = [row["path"] for row in site.log()]
    rows = rows_of(database)
    dead = {u: r for u, r in rows.items() if classify(SOFT_404, path_of(u)) == "dead"}
    real = {u: r for u, r in rows.items() if classify(SOFT_404, path_of(u)) == "real"}
    assert dead
    assert real
    assert all(row["status"] == 200 for row in real.values())
    probes = [path for path in asked if "-no-such-page-" in path]
    if probe:
        assert len(probes) == 1  # the origin is asked once
        assert all(row["status"] == 404 for row in dead.values())
        assert all(row["fate"] == "http_error" for row in dead.values())
        assert crawler.stats.get_value("traps/soft_404") == len(dead)
    else:
        assert probes == []
        assert all(row["status"] == 200 for row in dead.values())


@deferred_f_from_coro_f
async def test_a_directory_of_missing_pages_is_not_asked_for_more(settings, tmp_path):
    """The soft-404 host's dead links all lead into /old/article/: once three of
    them were found missing, the others are cut without a fetch."""
    database = f"sqlite:///{tmp_path}/pages.db"
    with running_trap_site(hosts=SOFT_404 + 1) as site:
        values = settings(
            RECORDS_DATABASE_URL=database, DEPTH_LIMIT=DEPTH, TRAPS_SOFT_404=True
        )
        crawler = await crawl(values, [site.seeds[SOFT_404]], scope="seed-hosts")
        asked = {row["path"] for row in site.log()}
    rows = rows_of(database)
    dead = {u: r for u, r in rows.items() if classify(SOFT_404, path_of(u)) == "dead"}
    fetched = {u for u in dead if path_of(u) in asked}
    cut = {u: r["error"] for u, r in dead.items() if r["fate"] == "trap"}
    assert len(dead) == 9  # every dead link has its record
    assert 3 <= len(fetched) < 9
    assert set(cut) == set(dead) - fetched
    assert all(error.startswith("DeadDirectory: ") for error in cut.values())
    assert crawler.stats.get_value("traps/dead_directory") == len(cut)
    real = {(SOFT_404, p) for p in asked if classify(SOFT_404, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, SOFT_404 + 1) if h == SOFT_404} <= real


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@deferred_f_from_coro_f
async def test_a_host_gets_no_more_pages_than_its_budget(settings, redis):
    with running_site(hosts=2, pages=30, links=4, cross=0.0) as site:
        values = settings(FRONTIER_HOST_MAX_PAGES=10)
        crawler = await crawl(values, site.seeds[:2], scope="seed-hosts")
        pages = site.pages()
    for index in (0, 1):
        fetched = {row["path"] for row in pages if row["host"] == site.host(index)}
        assert len(fetched) == 10, index
    assert len(pages) == 20  # none twice
    assert crawler.stats.get_value("traps/host_budget") > 0
    assert int(redis.hget(KEYS.traffic("127.0.0.2"), "traps") or 0) > 0


MIRRORS = 5  # the trap site's host with printer-friendly copies of its pages


@deferred_f_from_coro_f
async def test_copies_of_a_page_are_marked_near_duplicates(settings, tmp_path):
    database = f"sqlite:///{tmp_path}/pages.db"
    with running_trap_site(hosts=MIRRORS + 1) as site:
        # Nothing learnt: every copy is fetched, and marked.
        values = settings(RECORDS_DATABASE_URL=database, NEARDUP_RULE_SUPPORT=0)
        crawler = await crawl(values, [site.seeds[MIRRORS]], scope="seed-hosts")
    rows = [r for r in rows_of(database).values() if r["fate"] == "fetched"]
    kinds = {r["url"]: classify(MIRRORS, path_of(r["url"])) for r in rows}
    copies = [url for url, kind in kinds.items() if kind == "trap"]
    marked = [r["url"] for r in rows if r["near_duplicate"] == 1]
    assert copies
    # Of each page and its copies, every one but the first fetched is to be marked:
    # nearly all are (a copy's header moves a short page's SimHash by up to 7 bits,
    # one more than the default distance), and no page without a copy is.
    assert len(marked) >= 0.9 * len(copies)
    fetched_of = Counter(original(url) for url in kinds)
    assert all(fetched_of[original(url)] >= 2 for url in marked)
    assert crawler.stats.get_value("neardup/pages") == len(marked)


def original(url: str) -> str:
    """The page a printer-friendly copy (``?print=1``, ``/print/...``) copies."""
    path = path_of(url).removesuffix("?print=1")
    return path.removeprefix("/print") or "/"


@deferred_f_from_coro_f
async def test_copies_teach_rewrites_and_stop_being_fetched(settings, redis):
    """The mirrors host links each page's ``?print=1`` and ``/print/`` copies: one
    copy of each spelling, a well-known copy's marker, teaches the rule, and later
    copies are never fetched."""
    with running_trap_site(hosts=MIRRORS + 1) as site:
        values = settings(DEPTH_LIMIT=DEPTH)
        crawler = await crawl(values, [site.seeds[MIRRORS]], scope="seed-hosts")
        paths = [row["path"] for row in site.log() if row["path"] != "/robots.txt"]
    copies = [p for p in paths if classify(MIRRORS, p) == "trap"]
    real = {(MIRRORS, p) for p in paths if classify(MIRRORS, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, MIRRORS + 1) if h == MIRRORS} <= real
    # 30 real pages, 60 copies linked. The root's copies (depth 1) teach both
    # rules; the copies of depth-2 pages (1-2) and deeper never go out, but for
    # those in flight as a rule is learnt (one request a server at a time).
    assert copies
    numbers = [int(m[1]) for p in copies if (m := re.search(r"/page/(\d+)", p))]
    assert max(numbers, default=0) < 3, copies
    rules = redis.hgetall(KEYS.url_rules(f"127.0.0.{2 + MIRRORS}"))
    assert rules[b"r:param:print=1"] == b"1"
    assert rules[b"r:param:print=*"] == b"1"  # "print" is a marker whatever its value
    assert rules[b"r:segments:1:print"] == b"1"
    stats = crawler.stats
    assert stats.get_value("neardup/rules_learnt") == 3
    assert stats.get_value("neardup/links_rewritten", 0) >= 2 * (29 - 6)


@deferred_f_from_coro_f
async def test_a_copys_links_are_not_followed(settings):
    """The paths host serves /docs/ at any path below it: its copies /docs/a/ and
    /docs/b/ are fetched, their links (more copies, for ever) are not."""
    with running_trap_site(hosts=PATHS + 1) as site:
        values = settings(DEPTH_LIMIT=DEPTH, NEARDUP_COPY_LINKS=False)
        crawler = await crawl(values, [site.seeds[PATHS]], scope="seed-hosts")
        paths = [row["path"] for row in site.log() if row["path"] != "/robots.txt"]
    copies = sorted(p for p in paths if classify(PATHS, p) == "trap")
    assert copies == ["/docs/a/", "/docs/b/"]
    real = {(PATHS, p) for p in paths if classify(PATHS, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, PATHS + 1) if h == PATHS} <= real
    assert crawler.stats.get_value("neardup/copy_links_dropped") == 4


@deferred_f_from_coro_f
async def test_a_host_of_near_duplicates_gets_its_budget_lowered(settings, redis):
    """The facets host, nothing learnt: its facet pages are its listings again, so
    its recent pages are soon mostly near-duplicates and its links to itself stop
    being queued, while every real page (all linked early) is still fetched."""
    with running_trap_site(hosts=FACETS + 1) as site:
        values = settings(DEPTH_LIMIT=DEPTH, NEARDUP_RULE_SUPPORT=0)
        crawler = await crawl(values, [site.seeds[FACETS]], scope="seed-hosts")
        paths = [row["path"] for row in site.log() if row["path"] != "/robots.txt"]
    real = {(FACETS, p) for p in paths if classify(FACETS, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, FACETS + 1) if h == FACETS} <= real
    facets = [p for p in paths if classify(FACETS, p) == "trap"]
    stats = crawler.stats
    assert stats.get_value("neardup/budgets_lowered", 0) >= 1
    assert stats.get_value("traps/neardup_budget", 0) > 0
    # Without the lowered budget the query rule stops them at 4 paths x 50 (bench
    # .traps: 200); lowered, those already queued still go out.
    assert len(facets) < 4 * 50, len(facets)
    traffic = redis.hget(KEYS.traffic(f"127.0.0.{2 + FACETS}"), "traps")
    assert int(traffic or 0) >= stats.get_value("traps/neardup_budget")


@deferred_f_from_coro_f
async def test_a_queued_copy_of_a_fetched_page_is_not_fetched(
    settings, redis, tmp_path
):
    """The facets host queues each listing's facet links together, before any is
    fetched; once two of them taught a rule, the rest are found to be copies of
    the listings as they come up, and end as traps without a fetch."""
    database = f"sqlite:///{tmp_path}/pages.db"
    with running_trap_site(hosts=FACETS + 1) as site:
        values = settings(DEPTH_LIMIT=DEPTH, RECORDS_DATABASE_URL=database)
        crawler = await crawl(values, [site.seeds[FACETS]], scope="seed-hosts")
        asked = {row["path"] for row in site.log()}
    copies = {
        url: row["error"]
        for url, row in rows_of(database).items()
        if row["fate"] == "trap" and row["error"].startswith("KnownCopy")
    }
    assert copies
    assert crawler.stats.get_value("traps/known_copy") == len(copies)
    for url, error in copies.items():
        assert path_of(url) not in asked  # never fetched
        assert path_of(error.removeprefix("KnownCopy: copy of ")) in asked, error
    real = {(FACETS, p) for p in asked if classify(FACETS, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, FACETS + 1) if h == FACETS} <= real
    # The listings' first filters, of two keys, teach that their query strings are
    # the listing again (/shop/'s rule, and one for the three categories /shop/c/N/):
    # no filter of a filter is fetched.
    rules = redis.hgetall(KEYS.url_rules(f"127.0.0.{2 + FACETS}"))
    assert int(rules.get(b"r:query:/shop/", 0)) >= 2
    assert int(rules.get(b"r:query:/shop/c/{n}/", 0)) >= 2
    filtered = [p.partition("?")[2] for p in asked if classify(FACETS, p) == "trap"]
    assert filtered
    assert not [query for query in filtered if "&" in query]


@deferred_f_from_coro_f
async def test_filters_alike_teach_the_listing_s_rule_when_it_differs(
    settings, redis, monkeypatch
):
    """Ten times the real pages: a category lists 100 products, and its filter
    pages, titled "Shop" above the same list, are 10-14 bits from it (no evidence
    either way) but 1-4 bits from each other: two filters of other keys alike
    teach the categories' rule, and no filter of a filter is fetched."""
    monkeypatch.setenv(SCALE_VARIABLE, "10")  # the site's process inherits it
    with running_trap_site(hosts=FACETS + 1) as site:
        values = settings(DEPTH_LIMIT=DEPTH)
        await crawl(values, [site.seeds[FACETS]], scope="seed-hosts")
        asked = {row["path"] for row in site.log()}
    rules = redis.hgetall(KEYS.url_rules(f"127.0.0.{2 + FACETS}"))
    assert int(rules.get(b"r:query:/shop/c/{n}/", 0)) >= 2
    filtered = [p.partition("?")[2] for p in asked if classify(FACETS, p) == "trap"]
    assert filtered
    assert not [query for query in filtered if "&" in query]
    real = {(FACETS, p) for p in asked if classify(FACETS, p) == "real"}
    assert {(h, p) for h, p in real_pages(DEPTH, FACETS + 1) if h == FACETS} <= real
    assert len(real) > 300  # the larger site
