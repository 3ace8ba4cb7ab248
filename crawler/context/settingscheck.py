"""Settings a crawl would ignore are named at start, once each, with what to set.

A misspelled setting of ours (``POLITENESS_DAY_DELEY``) or a scrapy-redis leftover
(``SCHEDULER_PERSIST``) would otherwise do nothing, silently. Only what the user
set counts: the project's settings.py, a spider's ``custom_settings``, ``-s``
(priorities above the add-on's). Our prefixes and the known names come from
crawler/defaults/ and Scrapy's own defaults, never from a list kept by hand.
Warnings, not failures: a typo must not stop a production crawl.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.settings import default_settings as scrapy_default_settings

from crawler.defaults import default_settings, renamed_settings
from crawler.policy.scrapyredis import SCRAPY_REDIS_REPLACEMENTS
from crawler.policy.settingnames import (
    leftover_notes,
    setting_prefixes,
    unknown_setting_notes,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def scrapy_setting_names() -> frozenset[str]:
    """Scrapy's own settings, those with a default in Scrapy."""
    return frozenset(name for name in vars(scrapy_default_settings) if name.isupper())


def known_setting_names() -> frozenset[str]:
    """Every setting with a default, ours (crawler/defaults/) and Scrapy's, and
    the former names of ours (the add-on warns of those itself)."""
    return (
        frozenset(default_settings())
        | scrapy_setting_names()
        | frozenset(renamed_settings)
    )


def our_prefixes() -> frozenset[str]:
    """The prefixes of our own settings in crawler/defaults/ (``FRONTIER_``,
    ``POLITENESS_``, ...). Not those of Scrapy's we only change (``DEPTH_``,
    ``DOWNLOAD_``): Scrapy still reads names it no longer lists, and a project's
    own components may read names there, so "ignored" could be untrue."""
    scrapy_names = scrapy_setting_names()
    return setting_prefixes(
        name for name in default_settings() if name not in scrapy_names
    )


def user_set_names(settings: BaseSettings) -> list[str]:
    """Names set above the add-on's priority: by the project, a spider or ``-s``."""
    floor = SETTINGS_PRIORITIES["addon"]
    return [name for name in settings if (settings.getpriority(name) or 0) > floor]


def ignored_setting_notes(settings: BaseSettings) -> list[str]:
    """One line for each setting the user set that this crawl ignores."""
    given = user_set_names(settings)
    return leftover_notes(given, SCRAPY_REDIS_REPLACEMENTS) + unknown_setting_notes(
        [name for name in given if name not in SCRAPY_REDIS_REPLACEMENTS],
        known_setting_names(),
        our_prefixes(),
    )


def warn_ignored_settings(settings: BaseSettings) -> None:
    """A WARNING line for each setting the user set that this crawl ignores."""
    for note in ignored_setting_notes(settings):
        logger.warning("%(note)s", {"note": note})
