"""This project's settings: the add-on, and what belongs to this project alone.

Every default of the crawler lives in ``crawler/defaults/`` and is installed by the
add-on (``crawler/addon.py``), as in any other Scrapy project that enables it.
Override any setting per run with ``-s KEY=VALUE`` or, on scrapyd,
``setting=KEY=VALUE``.
"""

from __future__ import annotations

# The project's name, which Scrapy logs at start ("bot: crawler"); also the product
# token robots.txt rules are matched against (ROBOTSTXT_USER_AGENT).
BOT_NAME = "crawler"
# Where `scrapy crawl` and `scrapy list` look for spiders.
SPIDER_MODULES = ["crawler.spiders"]
# Where `scrapy genspider` writes a new spider.
NEWSPIDER_MODULE = "crawler.spiders"
# Our commands, found without installing the package (installed, its entry points
# give them to any project).
COMMANDS_MODULE = "crawler.commands"
# The frontier: scheduler, middlewares, pipelines and every default of ours.
ADDONS = {"crawler.addon.Frontier": 0}
# INFO: the crawl's lifecycle and progress; DEBUG adds a line per request and item,
# Scrapy's lists of enabled components and overridden settings (docs/operations.md).
LOG_LEVEL = "INFO"
# The versions Scrapy logs at start, on one line (Scrapy's list takes eleven).
LOG_VERSIONS = ["Twisted", "redis", "lxml"]
# Feeds are written as UTF-8 text, not with JSON's \u escapes.
FEED_EXPORT_ENCODING = "utf-8"
