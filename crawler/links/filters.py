"""Scrapy's ``LinkExtractor`` filters, on URLs whose parts are already known.

Scrapy's ``_link_allowed`` parses every URL again (``urlparse``, then
``parse_url`` inside ``url_is_from_any_domain`` and ``url_has_any_extension``);
`LinkFilter` reads the netloc and path the resolver already has and gives the
same answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.utils.misc import arg_to_iter

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scrapy.link import Link

    from crawler.links.resolve import ResolvedUrl

    Regexes = str | re.Pattern[str] | Iterable[str | re.Pattern[str]] | None

_T = TypeVar("_T")
# Scrapy's ``_is_valid_url``: the schemes a link may have.
VALID_PREFIXES = ("http://", "https://", "file://", "ftp://")


def _compile(value: Regexes) -> tuple[re.Pattern[str], ...]:
    return tuple(
        x if isinstance(x, re.Pattern) else re.compile(x) for x in arg_to_iter(value)
    )


@dataclass(frozen=True, slots=True)
class LinkFilter:
    """The URL and text filters of one extractor, compiled once."""

    allow: tuple[re.Pattern[str], ...]
    deny: tuple[re.Pattern[str], ...]
    allow_domains: tuple[str, ...]
    deny_domains: tuple[str, ...]
    deny_extensions: tuple[str, ...]
    restrict_text: tuple[re.Pattern[str], ...]

    @classmethod
    def from_options(  # noqa: PLR0913 (Scrapy's option names)
        cls,
        *,
        allow: Regexes,
        deny: Regexes,
        allow_domains: str | Iterable[str],
        deny_domains: str | Iterable[str],
        deny_extensions: str | Iterable[str] | None,
        restrict_text: Regexes,
    ) -> LinkFilter:
        """Scrapy's option values, read as Scrapy reads them."""
        if deny_extensions is None:
            deny_extensions = IGNORED_EXTENSIONS
        return cls(
            allow=_compile(allow),
            deny=_compile(deny),
            allow_domains=tuple({d.lower() for d in arg_to_iter(allow_domains)}),
            deny_domains=tuple({d.lower() for d in arg_to_iter(deny_domains)}),
            deny_extensions=tuple({"." + e for e in arg_to_iter(deny_extensions)}),
            restrict_text=_compile(restrict_text),
        )

    @property
    def only_scheme_and_extensions(self) -> bool:
        """Whether only the scheme and extension checks apply (the defaults)."""
        return not (
            self.allow or self.deny or self.allow_domains or self.deny_domains
            or self.restrict_text
        )  # fmt: skip

    def allows(self, parts: ResolvedUrl, text: str) -> bool:  # noqa: PLR0911
        """Scrapy's ``_link_allowed`` (one return per filter, in Scrapy's order)."""
        url, netloc, path = parts
        if not url.startswith(VALID_PREFIXES):
            return False
        if self.allow and not any(r.search(url) for r in self.allow):
            return False
        if self.deny and any(r.search(url) for r in self.deny):
            return False
        host = netloc.lower()
        if self.allow_domains and not _host_in(host, self.allow_domains):
            return False
        if self.deny_domains and _host_in(host, self.deny_domains):
            return False
        if path.lower().endswith(self.deny_extensions):
            return False
        return not self.restrict_text or any(r.search(text) for r in self.restrict_text)


def _host_in(host: str, domains: tuple[str, ...]) -> bool:
    """Scrapy's ``url_is_from_any_domain`` on a lower-cased netloc."""
    return bool(host) and any(host == d or host.endswith(f".{d}") for d in domains)


def first_of_each(items: list[_T], key: Callable[[_T], str]) -> list[_T]:
    """*items* without those whose key an earlier one had (Scrapy's ``unique``)."""
    seen: set[str] = set()
    kept = []
    for item in items:
        item_key = key(item)
        if item_key not in seen:
            seen.add(item_key)
            kept.append(item)
    return kept


def link_url(link: Link) -> str:
    return link.url
