"""crawler/render/advisor.py and sampler.py on a real Redis: two crawler objects (two
nodes) sharing sample slots and decisions, hostile state in Redis, re-checks, stale
claims, and a sample's second fetch."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler import meta
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.readers import delete_crawl
from crawler.render.advisor import (
    CLAIM_SECONDS,
    REFRESH_SECONDS,
    SAMPLE_LEVEL,
    UNDECIDED,
    RenderAdvisor,
    advisor_of,
)
from crawler.render.config import RenderConfig
from crawler.render.sampler import SAMPLE_PRIORITY, RenderSampler
from crawler.spiders.bfs import BfsSpider

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
HOST = "site.test:80"
T0 = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def advisors(
    settings: Callable[..., dict[str, Any]],
    count: int = 2,
    clock: Clock | None = None,
    **overrides: Any,
) -> list[RenderAdvisor]:
    """*count* advisors, each of its own crawler (as on *count* nodes)."""
    made = []
    for _ in range(count):
        crawler = get_crawler(BfsSpider, settings(RENDER_MODE="auto", **overrides))
        crawler.spider = crawler._create_spider()  # parked pages are stored with it
        config = RenderConfig.from_settings(crawler.settings)
        made.append(RenderAdvisor(crawler, config, KEYS, clock=clock or Clock()))
    return made


async def ask(advisor: RenderAdvisor, url: str) -> tuple[bool, Request]:
    """The advisor's answer for *url* and the request it saw."""
    request = Request(url)
    answer = advisor.wants_render(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer), request


async def sample_many(advisor: RenderAdvisor, urls: Iterable[str]) -> list[str]:
    """The URLs of *urls* the advisor picked as samples."""
    picked = []
    for url in urls:
        rendered, request = await ask(advisor, url)
        sample = bool(request.meta.get(meta.RENDER_SAMPLE))
        assert rendered is sample  # a sample is rendered; undecided pages: static
        if sample:
            picked.append(url)
    return picked


def hash_of(redis: redis_py.Redis, host: str = HOST) -> dict[str, str]:
    found: dict[bytes, bytes] = redis.hgetall(KEYS.render(host))  # type: ignore[assignment]
    return {k.decode(): v.decode() for k, v in found.items()}


def commands(redis: redis_py.Redis) -> int:
    """Commands the server has run (INFO itself counts once it is done)."""
    return int(redis.info("stats")["total_commands_processed"])


async def close(*items: RenderAdvisor) -> None:
    for advisor in items:
        await advisor.close()


@deferred_f_from_coro_f
async def test_sample_slots_are_bounded_across_nodes(settings, redis):
    one, two = advisors(settings, RENDER_SAMPLE_PAGES=3)
    urls = [f"http://site.test/p{i}.html" for i in range(12)]
    picked = await sample_many(one, urls[:6]) + await sample_many(two, urls[6:])
    await close(one, two)
    assert picked == urls[:3]  # the first three asked, whichever node asked
    assert hash_of(redis)["claimed:"] == "3"


@deferred_f_from_coro_f
async def test_a_decision_is_shared_and_answered_without_redis(settings, redis):
    one, two = advisors(settings, RENDER_SAMPLE_PAGES=3)
    assert await sample_many(one, ["http://site.test/a.html"] * 3)
    for _ in range(3):
        await one.record_sample(
            "http://site.test/a.html", gained_links=4, gained_text=0
        )
    assert hash_of(redis)["decision:"] == "render"
    assert hash_of(redis)["links:"] == "12"
    # the other node learns it from Redis, once; then answers from its copy
    rendered, _ = await ask(two, "http://site.test/b/c.html")
    assert rendered is True
    before = commands(redis)
    answers = [two.wants_render(Request(f"http://site.test/x{i}")) for i in range(50)]
    after = commands(redis)
    await close(one, two)
    assert answers == [True] * 50  # plain booleans: nothing awaited
    assert after == before + 1  # the first INFO only


@deferred_f_from_coro_f
async def test_a_static_host_takes_no_more_samples(settings, redis):
    one, two = advisors(settings, RENDER_SAMPLE_PAGES=2)
    await sample_many(one, ["http://site.test/1", "http://site.test/2"])
    for _ in range(2):
        await one.record_sample("http://site.test/1", gained_links=0, gained_text=0.01)
    picked = await sample_many(two, [f"http://site.test/{i}" for i in range(3, 20)])
    await close(one, two)
    assert picked == []
    assert hash_of(redis)["decision:"] == "static"
    assert one._stats.get_value("render/static_enough") == 2


@deferred_f_from_coro_f
async def test_a_mixed_host_is_decided_per_pattern(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=3)
    assert len(await sample_many(one, ["http://site.test/app/1"] * 3)) == 3
    await one.record_sample("http://site.test/app/1", gained_links=5, gained_text=0)
    await one.record_sample("http://site.test/app/2", gained_links=5, gained_text=0)
    await one.record_sample("http://site.test/doc/1", gained_links=0, gained_text=0)
    assert hash_of(redis)["decision:"] == "mixed"
    # /app/ has two of its three samples already: one more
    picked = await sample_many(one, [f"http://site.test/app/{i}" for i in range(3, 8)])
    assert picked == ["http://site.test/app/3"]
    await one.record_sample(picked[0], gained_links=2, gained_text=0)
    picked = await sample_many(one, [f"http://site.test/doc/{i}" for i in range(2, 9)])
    assert picked == ["http://site.test/doc/2", "http://site.test/doc/3"]
    for url in picked:
        await one.record_sample(url, gained_links=0, gained_text=0.0)
    answers = {
        url: (await ask(one, url))[0]
        for url in ("http://site.test/app/9", "http://site.test/doc/9")
    }
    fresh, request = await ask(one, "http://site.test/new/1")
    await close(one)
    assert answers == {"http://site.test/app/9": True, "http://site.test/doc/9": False}
    assert request.meta.get(meta.RENDER_SAMPLE) is True  # a new pattern is sampled
    assert fresh is True
    state = hash_of(redis)
    assert (state["decision:/app/"], state["decision:/doc/"]) == ("render", "static")


@deferred_f_from_coro_f
async def test_a_decision_is_rechecked_once_per_interval(settings, redis):
    clock = Clock()
    one, two = advisors(
        settings, clock=clock, RENDER_SAMPLE_PAGES=2, RENDER_RECHECK_INTERVAL=600
    )
    await sample_many(one, ["http://site.test/1"] * 2)
    for _ in range(2):
        await one.record_sample("http://site.test/1", gained_links=0, gained_text=0)
    assert hash_of(redis)["decision:"] == "static"
    clock.now += 599
    assert await sample_many(two, [f"http://site.test/a{i}" for i in range(5)]) == []
    clock.now += 1
    # due: one more sample, for one node of the two
    picked = await sample_many(one, ["http://site.test/b1"])
    picked += await sample_many(two, ["http://site.test/b2", "http://site.test/b3"])
    assert picked == ["http://site.test/b1"]
    # the host changed: rendering pays now; the decision is dropped, sampled afresh
    await one.record_sample(picked[0], gained_links=3, gained_text=0)
    assert "decision:" not in hash_of(redis)
    # the other node learns it when its copy is REFRESH_SECONDS old
    assert await sample_many(two, ["http://site.test/c0"]) == []
    clock.now += REFRESH_SECONDS
    # (answered from its copy once more, which is read again meanwhile)
    assert await sample_many(two, ["http://site.test/c1"]) == []
    await asyncio.gather(*two._tasks)
    picked = await sample_many(two, [f"http://site.test/c{i}" for i in range(2, 6)])
    await close(one, two)
    assert picked == ["http://site.test/c2", "http://site.test/c3"]


@deferred_f_from_coro_f
async def test_a_recheck_that_agrees_keeps_the_decision(settings, redis):
    clock = Clock()
    (one,) = advisors(
        settings,
        count=1,
        clock=clock,
        RENDER_SAMPLE_PAGES=1,
        RENDER_RECHECK_INTERVAL=60,
    )
    await sample_many(one, ["http://site.test/1"])
    await one.record_sample("http://site.test/1", gained_links=2, gained_text=0)
    clock.now += 60
    _, request = await ask(one, "http://site.test/2")
    assert request.meta.get(meta.RENDER_SAMPLE) is True
    await one.record_sample("http://site.test/2", gained_links=2, gained_text=0)
    answer = await ask(one, "http://site.test/3")
    await close(one)
    assert answer[0] is True
    assert hash_of(redis)["decision:"] == "render"
    assert float(hash_of(redis)["decided_at:"]) == T0 + 60


@deferred_f_from_coro_f
async def test_claims_without_outcomes_are_given_again(settings, redis):
    clock = Clock()
    (one,) = advisors(settings, count=1, clock=clock, RENDER_SAMPLE_PAGES=2)
    assert len(await sample_many(one, ["http://site.test/1"] * 5)) == 2
    clock.now += CLAIM_SECONDS - 1
    assert await sample_many(one, ["http://site.test/2"]) == []
    clock.now += 1
    picked = await sample_many(one, ["http://site.test/3"] * 5)
    await close(one)
    assert len(picked) == 2


@deferred_f_from_coro_f
async def test_a_sample_that_cannot_be_compared_gives_its_slot_back(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=1)
    _, request = await ask(one, "http://site.test/file.pdf")
    assert request.meta.get(meta.RENDER_SAMPLE) is True
    await one.release(request)
    _, again = await ask(one, "http://site.test/page.html")
    await close(one)
    assert again.meta.get(meta.RENDER_SAMPLE) is True


@pytest.mark.parametrize(
    "claimed",
    [["site.test:80", "not a pattern"], ["evil key", ""], ["site.test:80"], "x"],
)
@deferred_f_from_coro_f
async def test_a_hostile_sample_mark_gives_nothing_back(settings, redis, claimed):
    (one,) = advisors(settings, count=1)
    request = Request("http://site.test/1", meta={SAMPLE_LEVEL: claimed})
    await one.release(request)
    await close(one)
    assert list(redis.scan_iter("*")) == []


@pytest.mark.parametrize(
    "hostile",
    [
        {"decision:": "eval(1)", "claimed:": "9" * 30, "paid:": "x", "junk": "1"},
        {"claimed_at:": "nan", "static:/a/b/": "1", "decided_at:": "-inf"},
    ],
)
@deferred_f_from_coro_f
async def test_hostile_state_is_counted_and_ignored(settings, redis, hostile):
    redis.hset(KEYS.render(HOST), mapping=hostile)
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=2)
    picked = await sample_many(one, [f"http://site.test/{i}" for i in range(4)])
    await one.record_sample(picked[0], gained_links=1, gained_text=0)
    await one.record_sample(picked[1], gained_links=1, gained_text=0)
    answer = await ask(one, "http://site.test/next")
    await close(one)
    assert len(picked) == 2
    assert answer[0] is True
    assert one._stats.get_value("render/bad_state") >= 1


@deferred_f_from_coro_f
async def test_a_key_of_the_wrong_type_is_replaced(settings, redis):
    redis.rpush(KEYS.render(HOST), "not", "a", "hash")
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=1)
    picked = await sample_many(one, ["http://site.test/1", "http://site.test/2"])
    await one.record_sample(picked[0], gained_links=0, gained_text=0)
    await close(one)
    assert picked == ["http://site.test/1"]
    assert redis.type(KEYS.render(HOST)) == b"hash"
    assert hash_of(redis)["decision:"] == "static"
    assert one._stats.get_value("render/bad_state") == 1


@deferred_f_from_coro_f
async def test_unreachable_redis_means_static_not_a_crash(settings, redis):
    (one,) = advisors(settings, count=1, REDIS_URL="redis://127.0.0.1:1/0")
    answers = [await ask(one, f"http://site.test/{i}") for i in range(3)]
    await close(one)
    assert [rendered for rendered, _ in answers] == [False] * 3
    assert not any(r.meta.get(meta.RENDER_SAMPLE) for _, r in answers)
    assert one._stats.get_value("redis/errors") >= 1


@deferred_f_from_coro_f
async def test_decisions_go_with_the_crawls_keys(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=1)
    await sample_many(one, ["http://site.test/1", "http://other.test/1"])
    await close(one)
    assert redis.exists(KEYS.render(HOST), KEYS.render("other.test:80")) == 2
    delete_crawl(redis, KEYS)
    assert list(redis.scan_iter("bfs:*")) == []


# --- pages fetched while undecided ---------------------------------------------------


def rendered_again(request: Request, callback: Any = None) -> Request:
    """What the sampler holds for a page fetched while its host was undecided."""
    meta_again = {"depth": 1, meta.RENDER: True}
    return request.replace(callback=callback, dont_filter=True, meta=meta_again)


def parse_of(advisor: RenderAdvisor) -> Any:
    spider = advisor._crawler.spider
    assert isinstance(spider, BfsSpider)
    return spider.parse


def parked(redis: redis_py.Redis, host: str = HOST) -> list[str]:
    names: list[bytes] = redis.hkeys(KEYS.render_parked(host))  # type: ignore[assignment]
    return sorted(name.decode() for name in names)


@deferred_f_from_coro_f
async def test_pages_fetched_while_undecided_are_rendered_once_it_pays(settings, redis):
    one, two = advisors(settings, RENDER_SAMPLE_PAGES=2)
    await sample_many(one, ["http://site.test/1", "http://site.test/2"])
    _, waiting = await ask(two, "http://site.test/w.html")  # every slot is out
    assert waiting.meta.get(UNDECIDED) is True
    again = rendered_again(waiting, parse_of(two))
    assert await two.park(again) is False  # parked, not sent
    assert parked(redis) == ["/ http://site.test/w.html"]
    assert (
        await one.record_sample("http://site.test/1", gained_links=2, gained_text=0)
        == []
    )
    late = await one.record_sample("http://site.test/2", gained_links=2, gained_text=0)
    await close(one, two)
    assert [(r.url, r.meta[meta.RENDER], r.dont_filter) for r in late] == [
        ("http://site.test/w.html", True, True)
    ]
    assert late[0].callback == parse_of(one)
    assert parked(redis) == []
    assert two._stats.get_value("render/parked_pages") == 1


@deferred_f_from_coro_f
async def test_pages_parked_for_a_static_host_are_dropped(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=1)
    await sample_many(one, ["http://site.test/1"])
    _, waiting = await ask(one, "http://site.test/w.html")
    await one.park(rendered_again(waiting))
    late = await one.record_sample("http://site.test/1", gained_links=0, gained_text=0)
    _, decided = await ask(one, "http://site.test/after.html")
    await close(one)
    assert late == []
    assert parked(redis) == []
    assert UNDECIDED not in decided.meta  # static as decided: nothing to park


@deferred_f_from_coro_f
async def test_a_page_whose_decision_came_meanwhile_is_sent_at_once(settings, redis):
    one, two = advisors(settings, RENDER_SAMPLE_PAGES=1)
    await sample_many(one, ["http://site.test/1"])
    _, waiting = await ask(two, "http://site.test/w.html")
    await one.record_sample("http://site.test/1", gained_links=1, gained_text=0)
    assert await two.park(rendered_again(waiting)) is True
    await close(one, two)
    assert parked(redis) == []


@deferred_f_from_coro_f
async def test_a_mixed_hosts_parked_pages_follow_their_patterns(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=2)
    await sample_many(one, ["http://site.test/app/1", "http://site.test/doc/1"])
    for url in ("http://site.test/app/w", "http://site.test/doc/w"):
        _, waiting = await ask(one, url)
        await one.park(rendered_again(waiting))
    await one.record_sample("http://site.test/app/1", gained_links=3, gained_text=0)
    late = await one.record_sample(
        "http://site.test/doc/1", gained_links=0, gained_text=0
    )
    assert late == []  # mixed: each pattern decides for its pages
    await sample_many(one, ["http://site.test/app/2", "http://site.test/doc/2"])
    late = await one.record_sample(
        "http://site.test/app/2", gained_links=1, gained_text=0
    )
    assert [r.url for r in late] == ["http://site.test/app/w"]
    late = await one.record_sample(
        "http://site.test/doc/2", gained_links=0, gained_text=0
    )
    await close(one)
    assert late == []
    assert parked(redis) == []


@deferred_f_from_coro_f
async def test_parked_pages_are_bounded_and_hostile_ones_skipped(settings, redis):
    (one,) = advisors(settings, count=1, RENDER_SAMPLE_PAGES=1)
    await sample_many(one, ["http://site.test/1"])
    redis.hset(
        KEYS.render_parked(HOST), mapping={"/ x": "not json", "/ y": '{"v": 99}'}
    )
    _, waiting = await ask(one, "http://site.test/w.html")
    await one.park(rendered_again(waiting))
    late = await one.record_sample("http://site.test/1", gained_links=1, gained_text=0)
    await close(one)
    assert [r.url for r in late] == ["http://site.test/w.html"]
    assert one._stats.get_value("render/bad_state") == 2


# --- the sampler ---------------------------------------------------------------------


def html(links: Iterable[str], text: str, script: str = "var x = 1;") -> bytes:
    anchors = "".join(f'<a href="{link}">l</a>' for link in links)
    scripts = f"<script>{script}</script>" if script else ""
    return f"<html><body><p>{text}</p>{anchors}{scripts}</body></html>".encode()


def rendered_sample(
    url: str, static: bytes | None, rendered: bytes, request: Request
) -> HtmlResponse:
    """The response of a sample's browser fetch: the rendered DOM, and the static
    document as the render handler keeps it."""
    if static is not None:
        request.meta[meta.RENDER_STATIC_BODY] = static
    return HtmlResponse(url, body=rendered, encoding="utf-8", request=request)


async def run(
    sampler: RenderSampler, response: TextResponse, output: list[Any]
) -> list[Any]:
    async def spider_output() -> AsyncIterator[Any]:
        for item in output:
            yield item

    return [
        item async for item in sampler.process_spider_output(response, spider_output())
    ]


def sampling(settings: Callable[..., dict[str, Any]]) -> tuple[Any, Any, Any]:
    crawler = get_crawler(
        BfsSpider, settings(RENDER_MODE="auto", RENDER_SAMPLE_PAGES=1)
    )
    return crawler, RenderSampler.from_crawler(crawler), advisor_of(crawler)


@deferred_f_from_coro_f
async def test_a_sample_is_rendered_once_and_compared_with_its_static_page(
    settings, redis
):
    crawler, sampler, advisor = sampling(settings)
    url = "http://site.test/app/page.html"
    rendered, request = await ask(advisor, url)
    assert rendered is True  # a sample is rendered...
    assert request.meta[meta.RENDER_KEEP_STATIC] is True  # ...keeping what was served
    static_links = ["http://site.test/app/a.html", "http://elsewhere.test/x"]
    # rendered: two more links of its own host, one of another host (not counted)
    rendered_links = [
        *static_links,
        "http://site.test/app/b.html",
        "http://site.test/c.html",
        "http://ads.test/z",
    ]
    response = rendered_sample(
        url, html(static_links, "hello"), html(rendered_links, "hello"), request
    )
    output = [Request("http://site.test/app/b.html"), {"item": 1}]
    out = await run(sampler, response, output)
    await advisor.close()
    assert out == output  # the spider's output passes as it was, nothing added
    assert crawler.stats.get_value("render/samples") == 1
    assert crawler.stats.get_value("render/gained_links") == 2
    state = hash_of(redis)
    assert (state["decision:"], state["links:"], state["links:/app/"]) == (
        "render",
        "2",
        "2",
    )


@deferred_f_from_coro_f
async def test_more_text_alone_makes_rendering_pay(settings, redis):
    crawler, sampler, advisor = sampling(settings)
    url = "http://site.test/p.html"
    _, request = await ask(advisor, url)
    text = "word " * 200  # 1,000 characters
    static, rendered = html([], text), html([], text + "more " * 50)  # +250
    await run(sampler, rendered_sample(url, static, rendered, request), [])
    await advisor.close()
    assert crawler.stats.get_value("render/gained_links") == 0
    assert hash_of(redis)["decision:"] == "render"


@deferred_f_from_coro_f
async def test_a_line_a_script_adds_to_a_small_page_does_not_pay(settings, redis):
    crawler, sampler, advisor = sampling(settings)
    url = "http://site.test/p.html"
    _, request = await ask(advisor, url)
    static, rendered = html([], "Page 3"), html([], "Page 3 Updated 2026-11-25 01:00")
    await run(sampler, rendered_sample(url, static, rendered, request), [])
    await advisor.close()
    assert hash_of(redis)["decision:"] == "static"
    assert crawler.stats.get_value("render/static_enough") == 1


@pytest.mark.parametrize(
    ("static", "without_scripts"),
    [
        (b"<html><body><p>Plain</p><a href='/a'>a</a></body></html>", 1),
        (b"<html><body onload='more()'><p>Plain</p></body></html>", None),
        (b"<html><body><svg><script>more()</script></svg></body></html>", None),
    ],
)
@deferred_f_from_coro_f
async def test_a_page_that_runs_no_script_gains_nothing_from_a_browser(
    settings, redis, static, without_scripts
):
    crawler, sampler, advisor = sampling(settings)
    url = "http://site.test/p.html"
    _, request = await ask(advisor, url)
    # (the rendered DOM differs, as if something had run: ignored without scripts)
    rendered = html([f"http://site.test/{i}" for i in range(5)], "Plain")
    await run(sampler, rendered_sample(url, static, rendered, request), [])
    await advisor.close()
    stats = crawler.stats
    assert stats.get_value("render/samples_without_scripts") == without_scripts
    expected = "static" if without_scripts else "render"
    assert hash_of(redis)["decision:"] == expected


@pytest.mark.parametrize(
    ("static", "rendered"),
    [
        (None, html([], "a page")),  # the handler kept no static document
        (b"%PDF-1.4", b"%PDF-1.4"),
    ],
)
@deferred_f_from_coro_f
async def test_a_sample_that_cannot_be_compared_is_given_back(
    settings, redis, static, rendered
):
    crawler, sampler, advisor = sampling(settings)
    url = "http://site.test/doc.pdf"
    _, request = await ask(advisor, url)
    response: TextResponse = rendered_sample(url, static, rendered, request)
    if static is not None:  # not a page: what the browser showed is no HTML
        pdf = {"Content-Type": "application/pdf"}
        response = TextResponse(url, body=rendered, request=request, headers=pdf)
    out = await run(sampler, response, [{"record": 1}])
    _, next_request = await ask(advisor, "http://site.test/page.html")
    await advisor.close()
    assert out == [{"record": 1}]
    assert crawler.stats.get_value("render/samples_unusable") == 1
    assert next_request.meta.get(meta.RENDER_SAMPLE) is True  # the slot came back


@deferred_f_from_coro_f
async def test_a_page_fetched_while_undecided_is_parked_then_sent(settings, redis):
    crawler, sampler, advisor = sampling(settings)
    _, sample = await ask(advisor, "http://site.test/1.html")
    _, waiting = await ask(advisor, "http://site.test/2.html")
    assert waiting.meta[UNDECIDED] is True
    waiting.meta["depth"] = 2
    waiting.priority = -3
    waiting.headers["If-None-Match"] = '"v1"'
    static = HtmlResponse(
        waiting.url, body=html([], "two"), encoding="utf-8", request=waiting
    )
    assert await run(sampler, static, ["record"]) == ["record"]  # parked
    response = rendered_sample(
        sample.url, html([], "one"), html(["/3.html"], "one"), sample
    )
    out = await run(sampler, response, [])
    await advisor.close()
    (again,) = out  # sent once the host is decided
    assert (again.url, again.dont_filter, again.priority) == (
        "http://site.test/2.html",
        True,
        SAMPLE_PRIORITY - 3,
    )
    assert again.meta["depth"] == 2  # the page's own depth, not one deeper
    assert again.meta[meta.RENDER] is True
    assert UNDECIDED not in again.meta
    assert b"If-None-Match" not in again.headers
    assert crawler.stats.get_value("render/late_pages") == 1


# --- Redis going away --------------------------------------------------------------


@deferred_f_from_coro_f
async def test_an_outcome_waits_for_redis_and_requests_do_not(settings, restartable):
    (one,) = advisors(
        settings, count=1, REDIS_URL=restartable.url, RENDER_SAMPLE_PAGES=1
    )
    await sample_many(one, ["http://site.test/1"])
    restartable.stop()
    try:
        outcome = asyncio.ensure_future(
            one.record_sample("http://site.test/1", gained_links=1, gained_text=0)
        )
        answers = [await ask(one, f"http://other.test/{i}") for i in range(3)]
        await asyncio.sleep(2.0)
        assert not outcome.done()  # waiting for Redis, not failed
        restartable.start()
        await asyncio.wait_for(outcome, timeout=15)
        answer, _ = await ask(one, "http://site.test/2")
    finally:
        await close(one)
    assert [rendered for rendered, _ in answers] == [False] * 3  # static meanwhile
    assert answer is True  # the outcome reached Redis: the host is decided
    reader = redis_py.Redis.from_url(restartable.url)
    try:
        assert hash_of(reader)["decision:"] == "render"
    finally:
        reader.close()
    assert one._stats.get_value("redis/outages") == 1
