"""Request meta and cb_kwargs through a whole crawl: back exactly, or refused loudly."""

from __future__ import annotations

import dataclasses
import logging
import math
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from scrapy import Field, Item, Request, Spider, signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.servers import running_site
from tests.site import url_of
from tests.unit.test_frontier_values import same

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.http import Response

pytestmark = pytest.mark.integration


class Product(Item):
    name = Field()
    price = Field()
    sizes = Field()


@dataclasses.dataclass(frozen=True)
class Visit:
    url: str
    when: datetime
    tags: frozenset[str]


# One meta key per type a spider may carry; cb_kwargs get them all nested in one.
VALUES: dict[str, Any] = {
    "str": "caf\u00e9 \U0001f600",
    "int": 2**64 + 1,
    "float": 0.1,
    "nan": math.nan,
    "inf": -math.inf,
    "bool": False,
    "none": None,
    "list": [1, [2, "three"]],
    "tuple": (1, ("a", b"b")),
    "dict_int_keys": {1: "one", (2, 3): "pair", None: "none"},
    "dict_tag_key": {"~": "tuple", "v": [1]},
    "bytes": b"\x00\xff\x80body",
    "naive_datetime": datetime(2024, 2, 29, 23, 59, 59, 123456),
    "utc_datetime": datetime(2024, 1, 1, 12, tzinfo=UTC),
    "offset_datetime": datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5.75))),
    "zone_datetime": datetime(2024, 10, 27, 2, 30, tzinfo=ZoneInfo("Europe/Paris"), fold=1),
    "date": date(1999, 12, 31),
    "time": time(8, 30, 0, 5),
    "aware_time": time(8, 30, tzinfo=timezone(timedelta(hours=-3))),
    "timedelta": timedelta(days=2, seconds=3, microseconds=4),
    "decimal": Decimal("-12.3400"),
    "uuid": UUID("0f8fad5b-d9cb-469f-a165-70867728950e"),
    "set": {1, "a", (2, b"c")},
    "frozenset": frozenset({date(2020, 1, 1), 3}),
    "item": Product(name="pen", price=Decimal("1.20"), sizes=("S", "M")),
    "dataclass": Visit("http://x.example/", datetime(2024, 5, 1, tzinfo=UTC), frozenset({"a"})),
}  # fmt: skip


class MetaSpider(Spider):
    """From the seed, asks for pages carrying every value, one unencodable request,
    and plain pages; records what the callbacks receive."""

    name = "meta"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.received: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.parse)

    def parse(self, response: Response) -> Iterator[Request]:
        rich, refused, *plain = self.urls[1:]
        yield Request(
            rich,
            callback=self.parse_values,
            meta=dict(VALUES),
            cb_kwargs={"values": dict(VALUES), "pair": (1, 2)},
        )
        yield Request(
            refused, callback=self.parse_values, meta={"fine": 1, "handle": lambda: 1}
        )
        for url in plain:
            yield Request(url, callback=self.parse_values)

    def parse_values(self, response: Response, **kwargs: Any) -> None:
        meta = {key: response.meta[key] for key in VALUES if key in response.meta}
        self.received[response.url] = (meta, kwargs)


@deferred_f_from_coro_f
async def test_every_meta_type_survives_the_frontier_and_the_rest_is_refused(
    settings, caplog
):
    with running_site(hosts=2, pages=6, links=1) as site:
        urls = [url_of(site.spec, host, page) for host in (0, 1) for page in (0, 1, 2)]
        seed, rich, refused, *plain = urls
        crawler = get_crawler(MetaSpider, settings())
        dropped: list[str] = []

        def on_dropped(request: Request, spider: Spider) -> None:
            dropped.append(request.url)

        # Held here: signal receivers are weak references.
        crawler.signals.connect(on_dropped, signal=signals.request_dropped)
        with caplog.at_level(logging.ERROR, logger="crawler.frontier.admission"):
            await crawler.crawl_async(urls=urls)
        fetched = {f"http://{row['host']}{row['path']}" for row in site.pages()}
    stats = crawler.stats.get_value
    assert stats("finish_reason") == "finished"
    assert stats("frontier/enqueued") == len(urls) - 1  # all but the refused one
    assert stats("scheduler/dequeued/redis") == len(urls) - 1

    meta, kwargs = crawler.spider.received[rich]
    for key, value in VALUES.items():
        assert same(meta[key], value), key
    assert same(kwargs, {"values": VALUES, "pair": (1, 2)})

    assert fetched == {seed, rich, *plain}
    assert set(crawler.spider.received) == {rich, *plain}
    assert dropped == [refused]
    assert stats("frontier/unencodable") == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    message = errors[0].getMessage()
    assert refused in message
    assert "meta key 'handle'" in message
    assert "MetaSpider.parse_values" in message
    assert "function" in message


class RepeatSpider(Spider):
    """Yields the same unencodable shape many times, and one of another kind; then
    the first refused URL again, with values that can be stored."""

    name = "repeat"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.parse)

    def parse(self, response: Response) -> Iterator[Request]:
        for url in self.urls[1:4]:
            yield Request(url, callback=self.parse, meta={"handle": object()})
        yield Request(self.urls[4], callback=self.parse, cb_kwargs={"x": self.parse})
        yield Request(self.urls[1], callback=self.done, meta={"handle": (1, 2)})

    def done(self, response: Response) -> None:
        """The end of the crawl: follows nothing."""


@deferred_f_from_coro_f
async def test_each_kind_of_refusal_is_logged_once_then_counted(settings, caplog):
    with running_site(hosts=1, pages=6, links=1) as site:
        urls = [url_of(site.spec, 0, page) for page in range(5)]
        crawler = get_crawler(RepeatSpider, settings())
        with caplog.at_level(logging.ERROR, logger="crawler.frontier.admission"):
            await crawler.crawl_async(urls=urls)
        fetched = [f"http://{row['host']}{row['path']}" for row in site.pages()]
    assert sorted(fetched) == sorted([urls[0], urls[1]])  # refused, then stored
    assert crawler.stats.get_value("frontier/unencodable") == 4
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "meta key 'handle'" in errors[0]
    assert "type object" in errors[0]
    assert "cb_kwargs key 'x'" in errors[1]
    assert "type method" in errors[1]
