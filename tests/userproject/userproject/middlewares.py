"""A downloader middleware of the project's own: names the project in a header of
every request (the test site logs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request


class ProjectHeaderMiddleware:
    def process_request(self, request: Request) -> None:
        request.headers["X-Crawler-Node"] = "userproject"
