"""A plain ``Spider`` whose items come in every kind itemadapter knows: dicts,
``scrapy.Item``, dataclasses and attrs classes, one kind a page by its number (page
N yields kind N % 5), and no item at all from every fifth page."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

import attrs
import scrapy
from scrapy import Spider

from userproject.spiders import domains_of, host_list

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response


class PageItem(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()
    kind = scrapy.Field()


@dataclasses.dataclass
class PageData:
    url: str
    title: str | None
    kind: str = "dataclass"


@attrs.define
class PageAttrs:
    url: str
    title: str | None
    kind: str = "attrs"


class KindsSpider(Spider):
    name = "kinds"

    def __init__(self, hosts: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        authorities = host_list(hosts)
        self.allowed_domains = domains_of(authorities)
        self.start_urls = [f"http://{authorities[0]}/"]

    def parse(self, response: Response) -> Iterator[Any]:
        url, title = response.url, response.css("title::text").get()
        number = re.search(r"/p/(\d+)\.html$", url)
        kind = int(number.group(1)) % 5 if number else 0
        if kind == 0:
            yield {"url": url, "title": title, "kind": "dict"}
        elif kind == 1:
            yield PageItem(url=url, title=title, kind="item")
        elif kind == 2:
            yield PageData(url, title)
        elif kind == 3:
            yield PageAttrs(url, title)
        yield from response.follow_all(css="a", callback=self.parse)
