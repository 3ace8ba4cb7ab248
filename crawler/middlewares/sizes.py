"""Responses over ``DOWNLOAD_MAXSIZE``, once decompressed, refused with a fate.

Scrapy enforces ``DOWNLOAD_MAXSIZE`` in two places: the download handler cuts a body
whose Content-Length, or whose bytes as they stream in, pass it
(``DownloadCancelledError``); and ``HttpCompressionMiddleware`` stops inflating a body
that passes it once decompressed (a gzip bomb), but raises a plain ``IgnoreRequest``,
which tells "too large" from "robots.txt forbids it" only by its message. This
middleware takes Scrapy's place and raises ``ResponseTooLargeError`` instead, so the
fate is read from the class (``crawler.policy.fates``), and counts both cases in
``sizes/too_large``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.utils._compression import _DecompressionMaxSizeExceeded

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response


class ResponseTooLargeError(IgnoreRequest):
    """The response's body passed DOWNLOAD_MAXSIZE once decompressed."""


class SizeLimitedCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, its size limit raised as ``ResponseTooLargeError``."""

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            if not isinstance(exc.__cause__, _DecompressionMaxSizeExceeded):
                raise
            self._count()
            raise ResponseTooLargeError(str(exc)) from exc.__cause__

    def process_exception(self, request: Request, exception: Exception) -> None:
        """Counts the bodies the download handler cut; Scrapy's error goes on."""
        if isinstance(exception, DownloadCancelledError):
            self._count()

    def _count(self) -> None:
        if self.stats is not None:
            self.stats.inc_value("sizes/too_large")
