"""The whole of what a Scrapy project needs to crawl through the frontier."""

from __future__ import annotations

import os

BOT_NAME = "userproject"
SPIDER_MODULES = ["userproject.spiders"]

# The frontier: its scheduler, middlewares, pipelines and defaults.
ADDONS = {"crawler.addon.Frontier": 0}
# The crawl's Redis, shared by every node; empty starts a private server.
REDIS_URL = os.environ.get("REDIS_URL", "")
