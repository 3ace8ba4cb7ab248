"""The four crawls: their command lines, environments and settings.

Every crawl gets the same ``COMMON`` settings on its command line; each adds only
what selects its scheduler. The frontier crawl runs the project's ``bfs`` spider under
``crawler.settings`` (found through ``scrapy.cfg``); the add-on crawl runs the same
spider in a project of its own that only enables the add-on (``bench.addonsettings``);
the other two run ``bench/spiders.py`` under ``bench.settings``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
CRAWLERS = ("frontier", "addon", "plain", "scrapy-redis")
FRONTIER_PREFIX = "bfs"
SCRAPY_REDIS_SPIDER = "bench_bfs"

# The same for all the crawls.
COMMON: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
    "CONCURRENT_ITEMS": 16,
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DEPTH_LIMIT": 0,
    "LOG_LEVEL": "INFO",
    "LOGSTATS_INTERVAL": 60.0,
    "TELNETCONSOLE_ENABLED": False,
    # Scrapy 2.19's remote-control HTTP server: off, like the telnet console.
    "REMOTE_CONTROL_ENABLED": False,
    # The bfs spider's own setting (crawler.settings has the same default).
    "BFS_SCOPE": "any",
    "EXTENSIONS": {"bench.statsfile.StatsFile": 0},
}


@dataclass(frozen=True)
class CrawlSpec:
    """What one crawl needs to know about the benchmark around it."""

    seed: str
    redis_url: str
    total_pages: int
    timeout: float
    stats_file: Path
    profile_file: Path | None = None
    # Settings of this benchmark only, over the common and per-crawler ones.
    extra: dict[str, Any] = field(default_factory=dict)
    # The spider file of the plain and scrapy-redis crawls (``scrapy runspider``):
    # the project's bfs spider under another scheduler by default, or
    # bench/plainspiders.py, plain Scrapy's CrawlSpider.
    spider_file: Path = BENCH / "spiders.py"
    # Spider arguments (-a) besides the seeds.
    spider_args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Command:
    """A crawl's argv, working directory and environment."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]


def command(name: str, spec: CrawlSpec) -> Command:
    """The command line of crawl *name* (one of ``CRAWLERS``)."""
    settings = {
        **COMMON,
        "CLOSESPIDER_TIMEOUT": max(60, int(spec.timeout) - 60),
        "BENCH_STATS_FILE": str(spec.stats_file),
        **_own_settings(name, spec),
        **spec.extra,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if name == "frontier":
        scrapy_args = ["crawl", "bfs"]
    elif name == "addon":
        env["SCRAPY_SETTINGS_MODULE"] = "bench.addonsettings"
        scrapy_args = ["crawl", "bfs"]
    else:
        env["SCRAPY_SETTINGS_MODULE"] = "bench.settings"
        scrapy_args = ["runspider", str(spec.spider_file)]
    python = [sys.executable]
    if spec.profile_file is not None:
        python += ["-m", "cProfile", "-o", str(spec.profile_file)]
    argv = [*python, "-m", "scrapy", *scrapy_args, "-a", f"seeds={spec.seed}"]
    for key, value in spec.spider_args.items():
        argv += ["-a", f"{key}={value}"]
    for key, value in settings.items():
        argv += ["-s", f"{key}={_setting_text(value)}"]
    return Command(argv, ROOT, env)


def _own_settings(name: str, spec: CrawlSpec) -> dict[str, Any]:
    if name in ("frontier", "addon"):
        return {
            "REDIS_URL": spec.redis_url,
            "FRONTIER_HOST_CONCURRENCY": 4,
            "FRONTIER_RESET": True,
            "FRONTIER_PERSIST": True,
            "FRONTIER_DEDUP_CAPACITY": spec.total_pages,
            # The throughput benchmark has no politeness delay: DOWNLOAD_DELAY=0 above.
            "POLITENESS_DAY_DELAY": 0,
            "POLITENESS_NIGHT_DELAY": 0,
            "POLITENESS_JITTER": 0,
        }
    if name == "plain":
        return {
            "DEPTH_PRIORITY": 1,
            "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        }
    if name == "scrapy-redis":
        return {
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "SCHEDULER_QUEUE_CLASS": "scrapy_redis.queue.FifoQueue",
            "REDIS_URL": spec.redis_url,
            "SCHEDULER_FLUSH_ON_START": True,
            # Keep the dupefilter after the crawl, so its size can be measured.
            "SCHEDULER_PERSIST": True,
        }
    raise ValueError(f"unknown crawler {name!r}; choose from {', '.join(CRAWLERS)}")


def _setting_text(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)
