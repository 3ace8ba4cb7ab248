"""Reading a sitemap for the bfs spider (``-a sitemaps=1``): its type, a list of
pages (``urlset``) or of sitemaps (``sitemapindex``), and the absolute http(s) URLs
it lists. A gzipped sitemap is unpacked within ``DOWNLOAD_MAXSIZE``; a file that is
not a sitemap raises one of ``NOT_A_SITEMAP``, which the spider records as
``unparseable``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.http import Response

# What reading a file that is not a sitemap raises (XMLSyntaxError is a SyntaxError).
NOT_A_SITEMAP = (SyntaxError, ValueError, OSError, EOFError, StopIteration)


def read_sitemap(response: Response, max_size: int) -> tuple[str, list[str]]:
    """The sitemap's type ("urlset" or "sitemapindex") and the ``loc`` of each entry,
    as written; raises one of ``NOT_A_SITEMAP`` for anything else."""
    sitemap = Sitemap(sitemap_body(response, max_size))
    entries = [entry["loc"] for entry in sitemap]
    if sitemap.type not in ("urlset", "sitemapindex"):
        raise ValueError(f"root element {sitemap.type!r}")
    return sitemap.type, entries


def sitemap_body(response: Response, max_size: int) -> bytes:
    """The body, gunzipped (to at most *max_size* bytes) if it is gzipped."""
    if not gzip_magic_number(response):
        return response.body
    return gunzip(response.body, max_size=max_size)


def absolute_urls(response: Response, entries: Iterable[str]) -> list[str]:
    """The http(s) URLs *entries* name, resolved against the sitemap's URL."""
    urls = []
    for loc in entries:
        try:
            url = response.urljoin(loc)
        except ValueError:  # e.g. an unbalanced "[" in the host
            continue
        if url.startswith(("http://", "https://")):
            urls.append(url)
    return urls
