"""Which crawl a command acts on: a spider's crawl, found as its scheduler finds it.

A crawl's keys start with ``FRONTIER_KEY_PREFIX``, else its spider's name, read from
the settings the spider's crawl has: the project's, the spider's ``custom_settings``,
then ``-s``. So ``scrapy frontier status SPIDER`` reads the crawl ``scrapy crawl
SPIDER`` writes, in any project. Without a name, the project's only spider is meant
(the add-on's ``bfs`` only in a project without spiders of its own), or, with
several, ``FRONTIER_KEY_PREFIX`` when the project sets it; ``--prefix`` names a
crawl's keys directly. Every default of the add-on is in the settings, below the
project's, as in the crawl.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from scrapy.spiderloader import get_spider_loader

from crawler.crawlstate.keys import CrawlKeys
from crawler.defaults import install_defaults, install_pre_crawler_settings
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store.crawlshards import CrawlShards
from crawler.policy.order import ORDERS

if TYPE_CHECKING:
    from collections.abc import Sequence

    import redis
    from scrapy import Spider
    from scrapy.settings import BaseSettings


class CrawlNotFoundError(RuntimeError):
    """The command cannot tell which crawl is meant (said in one line)."""


@dataclass(frozen=True, slots=True)
class CrawlTarget:
    """The crawl's settings (with its spider's) and its keys."""

    settings: BaseSettings
    keys: CrawlKeys


def spider_names(settings: BaseSettings) -> list[str]:
    """The names of the spiders a crawl may run: the project's (``SPIDER_MODULES``)
    and the ``bfs`` spider the add-on brings."""
    return sorted(get_spider_loader(_with_addon_spiders(settings)).list())


def crawl_target(
    settings: BaseSettings, spider: str | None, prefix: str | None = None
) -> CrawlTarget:
    """The crawl of *spider* (None: the one the project makes unambiguous), or the
    crawl whose keys start with *prefix*, with the settings that crawl has. Raises
    ``CrawlNotFoundError``."""
    if prefix:
        return CrawlTarget(crawl_settings(settings), CrawlKeys(prefix))
    names = spider_names(settings)
    if spider is None:
        spider = _only_spider(settings, names)
        if spider is None:
            plain = crawl_settings(settings)
            return CrawlTarget(plain, CrawlKeys(plain["FRONTIER_KEY_PREFIX"]))
    if spider not in names:
        known = ", ".join(names) or "none"
        raise CrawlNotFoundError(
            f"unknown spider {spider!r} (this project's spiders: {known})"
        )
    spidercls = get_spider_loader(_with_addon_spiders(settings)).load(spider)
    settings = crawl_settings(settings, spidercls)
    return CrawlTarget(settings, CrawlKeys.of(settings, spider))


def crawl_settings(
    settings: BaseSettings, spidercls: type[Spider] | None = None
) -> BaseSettings:
    """The settings a crawl of *spidercls* has: the project's and ``-s``, the
    spider's ``custom_settings``, and every default of the add-on below them."""
    found = settings.copy()
    if spidercls is not None:
        spidercls.update_settings(found)
    install_defaults(found)
    return found


def _only_spider(settings: BaseSettings, names: Sequence[str]) -> str | None:
    """The spider meant when none is named: the project's only one (the add-on's
    ``bfs`` counts only in a project without its own); None when
    ``FRONTIER_KEY_PREFIX`` names the crawl. Raises ``CrawlNotFoundError``."""
    own = sorted(get_spider_loader(settings).list())
    candidates = own or list(names)
    if len(candidates) == 1:
        return candidates[0]
    if settings.get("FRONTIER_KEY_PREFIX"):
        return None
    raise CrawlNotFoundError(_which_spider(candidates))


def _with_addon_spiders(settings: BaseSettings) -> BaseSettings:
    """*settings* with the spider modules the add-on adds before a crawl."""
    found = settings.copy()
    install_pre_crawler_settings(found)
    return found


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


def crawl_shards(
    client: redis.Redis, keys: CrawlKeys, settings: BaseSettings
) -> CrawlShards:
    """The crawl's shards in *client*'s Redis, ranked in the order the crawl was
    queued with (kept in its meta hash), whatever the command's settings say;
    raises a one-line ``ValueError`` on a bad frontier setting."""
    config = FrontierConfig.from_settings(settings, keys.prefix)
    stored = client.hget(keys.meta, "frontier_order")
    order = stored.decode(errors="replace") if isinstance(stored, bytes) else ""
    if order not in ORDERS:
        order = config.order
    return CrawlShards.on(client, replace(config, prefix=keys.prefix, order=order))
