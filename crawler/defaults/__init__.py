"""Every setting of ours, with its default, and the Scrapy built-ins whose default we change.

The add-on (``crawler.addon.Frontier``) installs each of these at the ``addon``
priority, so any Scrapy project that enables it gets them and a setting the project,
``-s`` or scrapyd sets wins. Each setting carries the prefix of the module that reads
it (see the README's settings table). Components (scheduler, middlewares, pipelines)
are installed by the add-on itself.

One module per section, each setting with a one-line comment above it:
``scrapybuiltins`` (Scrapy's own settings we change), ``redis``, ``frontier``,
``politeness``, ``traps``, ``robots``, ``timeouts``, ``retrylater``, ``dns``,
``useragent``, ``botauth``, ``pipelines`` (page store, records, WARC, analysis),
``revisit``, ``neardup``, ``bfs``, ``render``, ``metrics``, ``traffic``,
``dashboard`` and
``quiet``. This package gathers them, so ``crawler.defaults.NAME`` and
``settings.setmodule("crawler.defaults")`` see every setting; a name is defined in
one section only (tests/unit/test_defaults.py).
"""

from __future__ import annotations

import logging
import typing

# The sections in their order, which default_settings() keeps.
# isort: off
from crawler.defaults.scrapybuiltins import *
from crawler.defaults.redis import *
from crawler.defaults.frontier import *
from crawler.defaults.politeness import *
from crawler.defaults.traps import *
from crawler.defaults.robots import *
from crawler.defaults.timeouts import *
from crawler.defaults.retrylater import *
from crawler.defaults.dns import *
from crawler.defaults.useragent import *
from crawler.defaults.botauth import *
from crawler.defaults.pipelines import *
from crawler.defaults.revisit import *
from crawler.defaults.neardup import *
from crawler.defaults.bfs import *
from crawler.defaults.render import *
from crawler.defaults.metrics import *
from crawler.defaults.traffic import *
from crawler.defaults.dashboard import *
from crawler.defaults.quiet import *
# isort: on

if typing.TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
# Settings renamed: the former name -> the name read now.
renamed_settings = {"PAGESTORE_DIR": "PAGESTORE_URL", "WARC_DIR": "WARC_URL"}

# --- Installing them ----------------------------------------------------------------


def default_settings() -> dict[str, typing.Any]:
    """Every setting of ``crawler.defaults``, by name."""
    return {name: value for name, value in globals().items() if name.isupper()}


def install_defaults(settings: BaseSettings) -> None:
    """Every default at the ``addon`` priority: below what a project or ``-s`` set."""
    for name, value in default_settings().items():
        settings.set(name, value, priority="addon")
    _carry_renamed(settings)


def _carry_renamed(settings: BaseSettings) -> None:
    """A setting set under its former name, above the new name's priority, gives
    the new name its value (with a warning, once: the names are then level)."""
    for former, name in renamed_settings.items():
        priority = settings.getpriority(former)
        if priority is not None and priority > (settings.getpriority(name) or 0):
            settings.set(name, settings[former], priority=priority)
            logger.warning(
                "%(former)s is now called %(name)s: its value is used as %(name)s",
                {"former": former, "name": name},
            )


def install_pre_crawler_settings(settings: BaseSettings) -> None:
    """What a crawl needs before any spider is built (Scrapy builds spiders before
    add-ons' ``update_settings``), and our commands too: the ``bfs`` spider's
    module, and every default."""
    settings.add_to_list("SPIDER_MODULES", "crawler.spiders")
    install_defaults(settings)
