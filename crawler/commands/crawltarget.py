"""Which crawl a command acts on: a spider's crawl, found as its scheduler finds it.

A crawl's keys start with ``FRONTIER_KEY_PREFIX``, else its spider's name, read from
the settings the spider's crawl has: the project's, the spider's ``custom_settings``,
then ``-s``. So ``scrapy frontier status SPIDER`` reads the crawl ``scrapy crawl
SPIDER`` writes, in any project. Without a name, the project's only spider is meant,
or, with several, ``FRONTIER_KEY_PREFIX`` when the project sets it; ``--prefix`` names
a crawl's keys directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.spiderloader import get_spider_loader

from crawler.crawlstate.keys import CrawlKeys

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.settings import BaseSettings


class CrawlNotFoundError(RuntimeError):
    """The command cannot tell which crawl is meant (said in one line)."""


@dataclass(frozen=True, slots=True)
class CrawlTarget:
    """The crawl's settings (with its spider's) and its keys."""

    settings: BaseSettings
    keys: CrawlKeys


def spider_names(settings: BaseSettings) -> list[str]:
    """The names of the project's spiders (``SPIDER_MODULES``)."""
    return sorted(get_spider_loader(settings).list())


def crawl_target(
    settings: BaseSettings, spider: str | None, prefix: str | None = None
) -> CrawlTarget:
    """The crawl of *spider* (None: the one the project makes unambiguous), or the
    crawl whose keys start with *prefix*. Raises ``CrawlNotFoundError``."""
    if prefix:
        return CrawlTarget(settings, CrawlKeys(prefix))
    names = spider_names(settings)
    if spider is None:
        if len(names) == 1:
            spider = names[0]
        elif settings.get("FRONTIER_KEY_PREFIX"):
            return CrawlTarget(settings, CrawlKeys(settings["FRONTIER_KEY_PREFIX"]))
        else:
            raise CrawlNotFoundError(_which_spider(names))
    if spider not in names:
        known = ", ".join(names) or "none"
        raise CrawlNotFoundError(
            f"unknown spider {spider!r} (this project's spiders: {known})"
        )
    crawl_settings = settings.copy()
    get_spider_loader(settings).load(spider).update_settings(crawl_settings)
    return CrawlTarget(crawl_settings, CrawlKeys.of(crawl_settings, spider))


def split_spider(
    words: Sequence[str], names: Sequence[str], *, expected: int | None
) -> tuple[str | None, list[str]]:
    """(spider, the other words) of a subcommand's *words*, *expected* of them
    after the spider's name (None: any number). A subcommand that takes no words
    reads one as a spider's name, known or not (``crawl_target`` refuses an unknown
    one); one that takes words reads the first as a spider's name only if it is one
    of *names* (and, for a fixed number, one word more than *expected* came)."""
    if expected == 0:
        if len(words) == 1:
            return words[0], []
        return None, list(words)
    if not words or words[0] not in names:
        return None, list(words)
    if expected is None or len(words) == expected + 1:
        return words[0], list(words[1:])
    return None, list(words)


def _which_spider(names: Sequence[str]) -> str:
    if not names:
        return "this project has no spider: name the crawl with --prefix PREFIX"
    return (
        f"this project has {len(names)} spiders ({', '.join(names)}): name the one "
        "whose crawl is meant (or set FRONTIER_KEY_PREFIX, or pass --prefix)"
    )
