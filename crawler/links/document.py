"""One lexbor parse of an HTML response, shared by its title, links and resources.

Scrapy parses a page with lxml for ``response.css`` and its ``LinkExtractor``;
lexbor (through selectolax) parses the same text about four times faster, so the
spider parses each page once, here, and reads everything from that tree.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from scrapy.http import TextResponse
from scrapy.utils.response import get_base_url
from selectolax.lexbor import LexborHTMLParser

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode


# lexbor's tree building is quadratic in the depth of unclosed elements (50,000
# nested <div> took 4 s here, 20,000 0.5 s, 5,000 30 ms): a page whose tags could
# nest deeper than this is cut where it does, a loss only hostile pages suffer.
MAX_DEPTH = 5000
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*")
_VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
    "param", "source", "track", "wbr", "frame", "keygen",
})  # fmt: skip


def _cut_deep_nesting(text: str) -> str:
    """*text* up to where its elements would nest deeper than `MAX_DEPTH`.

    One or two ``str.count`` calls clear ordinary pages; only the rest are scanned.
    """
    opened = text.count("<")
    if opened <= MAX_DEPTH or opened - 2 * text.count("</") <= MAX_DEPTH:
        return text
    depth = 0
    for match in _TAG.finditer(text):
        if match.group(1):
            depth = max(depth - 1, 0)
        elif match.group(2).lower() not in _VOID and not match.group(0).endswith("/"):
            depth += 1
            if depth > MAX_DEPTH:
                return text[: match.start()]
    return text


def _parse(text: str) -> LexborHTMLParser:
    """Parse *text* as parsel does for ``response.selector``: NULs removed.

    A text lexbor cannot take (a lone surrogate, a failed allocation) becomes an
    empty document rather than an error: hostile input yields no links.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    text = _cut_deep_nesting(text)
    try:
        return LexborHTMLParser(text)
    except (UnicodeError, RuntimeError, MemoryError, ValueError):
        pass
    try:
        return LexborHTMLParser(text.encode("utf-8", "replace"))
    except (RuntimeError, MemoryError, ValueError):
        return LexborHTMLParser("")


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
        self.tree = _parse(text)

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
