"""One lexbor parse of an HTML response, shared by its title, links and resources.

Scrapy parses a page with lxml for ``response.css`` and its ``LinkExtractor``;
lexbor (through selectolax) parses the same text about four times faster, so the
spider parses each page once, here, and reads everything from that tree.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from scrapy.http import TextResponse
from scrapy.utils.response import get_base_url

from crawler.policy.htmlparse import parse_html

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode


def _base_url(response: TextResponse) -> str:
    """Scrapy's base URL, or the page's own where a ``<base href>`` cannot be
    read (a bad port raises ValueError in Scrapy; browsers ignore such a base)."""
    try:
        return get_base_url(response)
    except ValueError:
        return response.url


class HtmlDocument:
    """A parsed HTML page: its tree, URLs, encoding and title.

    Building one never raises on hostile bytes (binary junk, a wrong encoding, an
    empty body, a ``<base href>`` Scrapy cannot read, where Scrapy raises);
    `from_response` raises ValueError only when given a response that has no text
    (not a ``TextResponse``).
    """

    def __init__(self, text: str, url: str, base_url: str, encoding: str) -> None:
        self.url = url
        self.base_url = base_url
        self.encoding = encoding
        self.tree = parse_html(text)

    @classmethod
    def from_response(cls, response: TextResponse) -> HtmlDocument:
        """Parse *response*; its base URL is read as Scrapy reads it (``<base href>``
        in the first 4 KB, joined with the response URL)."""
        if not isinstance(response, TextResponse):
            raise ValueError(  # noqa: TRY004 (the contract: ValueError only)
                f"HtmlDocument needs a TextResponse, got {type(response).__name__}"
            )
        return cls(response.text, response.url, _base_url(response), response.encoding)

    @functools.cached_property
    def title(self) -> str | None:
        """The first text of a ``<title>``: ``response.css("title::text").get()``."""
        first = self.tree.css_first("title")
        if first is None:
            return None
        text = first.text(deep=False)
        if text:
            return text
        # Rare: an empty first <title>; Scrapy's selector reads on to the next.
        for node in self.tree.css("title")[1:]:
            text = node.text(deep=False)
            if text:
                return text
        return None

    def select(self, selector: str) -> list[LexborNode]:
        """Elements matching the CSS *selector*, in document order, each once."""
        seen: set[int] = set()
        nodes = []
        for node in self.tree.css(selector):
            if node.mem_id not in seen:
                seen.add(node.mem_id)
                nodes.append(node)
        return nodes
