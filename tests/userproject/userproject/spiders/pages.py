"""A plain ``Spider`` with ``start_urls``: follows every link from one callback,
carrying the trail of titles in ``meta`` and the parent page in ``cb_kwargs``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Spider

from userproject.spiders import domains_of, host_list

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response


class PagesSpider(Spider):
    name = "pages"

    def __init__(self, hosts: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        authorities = host_list(hosts)
        self.allowed_domains = domains_of(authorities)
        self.start_urls = [f"http://{authorities[0]}/"]

    def parse(self, response: Response, parent: str | None = None) -> Iterator[Any]:
        trail = response.meta.get("trail", [])
        title = response.css("title::text").get()
        yield {
            "url": response.url,
            "title": title,
            "depth": response.meta.get("depth", 0),
            "parent": parent,
            "trail": trail,
        }
        for href in response.css("a::attr(href)").getall():
            yield response.follow(
                href,
                callback=self.parse,
                cb_kwargs={"parent": response.url},
                meta={"trail": [*trail, title]},
            )
