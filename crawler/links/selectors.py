"""CSS selectors for lexbor, from Scrapy's link-extractor options.

``LinkExtractor`` finds its candidate elements with one CSS query: ``selector_for``
builds it from the ``tags`` and ``attrs`` options (``a[href], area[href]`` for the
default ones), falling back to ``*`` where CSS cannot say what Scrapy's exact,
case-sensitive names mean. ``checked_selectors`` checks ``restrict_css`` when the
extractor is built, since lexbor refuses some selectors parsel takes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scrapy.utils.misc import arg_to_iter
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

if TYPE_CHECKING:
    from collections.abc import Iterable

_CSS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
LOWER_NAME = re.compile(r"[a-z][a-z0-9-]*")


def selector_for(tags: frozenset[str], attrs: frozenset[str]) -> str:
    """A CSS selector for the candidate elements (names are checked exactly
    afterwards: CSS type selectors ignore case, Scrapy's names do not)."""
    if "*" in tags or any(not _CSS_NAME.fullmatch(t) for t in tags):
        return "*"
    # CSS attribute selectors ignore case too: only a lower-case name (all
    # that lexbor stores for HTML) can go in the selector.
    if len(attrs) == 1 and LOWER_NAME.fullmatch(next(iter(attrs))):
        (attr,) = attrs
        return ", ".join(f"{tag}[{attr}]" for tag in sorted(tags))
    return ", ".join(sorted(tags))


def checked_selectors(selectors: str | Iterable[str]) -> tuple[str, ...]:
    """*selectors*, each checked now: lexbor refuses some that parsel takes
    (``::attr()``, ``::text``, ``:contains()``), and a page is no place to learn it."""
    checked = tuple(arg_to_iter(selectors))
    probe = LexborHTMLParser("")
    for selector in checked:
        try:
            probe.css(selector)
        except SelectolaxError as error:
            raise ValueError(
                f"restrict_css {selector!r} is not a CSS selector lexbor can use "
                f"({error}); select elements (no pseudo-elements)"
            ) from error
    return checked
