"""A ``Spider`` whose ``async def start()`` yields its requests: each host's root,
a page that is not there (404) and, with ``-a refused=ADDR:PORT``, a host that
refuses connections (its errback tells which kind of failure came); items carried in ``meta``, ``cb_kwargs``, an errback, and a
request of its own from each root's callback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.exceptions import DownloadConnectionRefusedError, IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError

from userproject.spiders import domains_of, host_list

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.http import Response
    from twisted.python.failure import Failure


class StartsSpider(Spider):
    name = "starts"

    def __init__(self, hosts: str = "", refused: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hosts = host_list(hosts)
        self.refused = refused
        self.allowed_domains = domains_of(self.hosts)

    async def start(self) -> AsyncIterator[Request]:
        for index, host in enumerate(self.hosts):
            yield self._request(f"http://{host}/", index)
        yield self._request(f"http://{self.hosts[0]}/missing.html", 0)
        if self.refused:
            yield self._request(f"http://{self.refused}/", -1)

    def _request(self, url: str, index: int) -> Request:
        return Request(
            url,
            callback=self.parse_root,
            errback=self.failed,
            cb_kwargs={"host_index": index},
            meta={"item": {"seed": url, "host_index": index}},
        )

    def parse_root(self, response: Response, host_index: int) -> Iterator[Any]:
        title = response.css("title::text").get()
        yield {**response.meta["item"], "url": response.url, "title": title}
        yield response.follow(
            "/p/1.html",
            callback=self.parse_page,
            errback=self.failed,
            cb_kwargs={"root_title": title},
            meta={"item": {"root": response.url, "host_index": host_index}},
        )

    def parse_page(self, response: Response, root_title: str) -> Iterator[Any]:
        yield {
            **response.meta["item"],
            "url": response.url,
            "title": response.css("title::text").get(),
            "root_title": root_title,
        }

    def failed(self, failure: Failure) -> Iterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        kind = failure.check(HttpError, IgnoreRequest, DownloadConnectionRefusedError)
        yield {
            "failed": request.url,
            "status": failure.value.response.status if kind is HttpError else None,
            "error": kind.__name__ if kind else repr(failure.value),
            "cb_kwargs": request.cb_kwargs,
            "item": request.meta.get("item"),
        }
