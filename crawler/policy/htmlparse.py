"""One lexbor parse of HTML text that hostile pages cannot stall or break: NULs
removed as parsel removes them, nesting cut at ``MAX_DEPTH``, a text lexbor refuses
parsed again with its bad characters replaced, or an empty document. Shared by the
links of a page (``crawler.links.document``) and its visible text
(``crawler.policy.simhash``). Pure: no I/O.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

# lexbor's tree building is quadratic in the depth of unclosed elements (50,000
# nested <div> took 4 s here, 20,000 0.5 s, 5,000 30 ms): a page whose tags could
# nest deeper than this is cut where it does, a loss only hostile pages suffer.
MAX_DEPTH = 5000
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*")
_VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
    "param", "source", "track", "wbr", "frame", "keygen",
})  # fmt: skip


def cut_deep_nesting(text: str) -> str:
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


def parse_html(text: str) -> LexborHTMLParser:
    """Parse *text* as parsel does for ``response.selector``: NULs removed.

    A text lexbor cannot take (a lone surrogate, a failed allocation) becomes an
    empty document rather than an error: hostile input yields no links or text.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    text = cut_deep_nesting(text)
    try:
        return LexborHTMLParser(text)
    except (UnicodeError, RuntimeError, MemoryError, ValueError):
        pass
    try:
        return LexborHTMLParser(text.encode("utf-8", "replace"))
    except (RuntimeError, MemoryError, ValueError):
        return LexborHTMLParser("")
