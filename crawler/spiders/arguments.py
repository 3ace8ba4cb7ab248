"""The bfs spider's arguments: which it takes, and what a crawl that cannot start
with them does (nothing)."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler

# The spider's own arguments (-a NAME=VALUE).
ARGUMENTS = ("seeds", "seeds_file", "scope", "sitemaps")
# Arguments others pass that the spider accepts and ignores: scrapyd's job id.
PASSED_THROUGH = frozenset({"_job"})
# Priority of the settings a crawl that cannot start runs with: above -s (40).
STAND_DOWN = 100


def stand_down(crawler: Crawler) -> None:
    """Let a crawl that cannot start touch nothing on its way out: Scrapy's own
    in-memory scheduler stands in for the frontier (no keys written to Redis, no
    private server started) and no item pipeline opens a database."""
    crawler.settings.set("SCHEDULER", "scrapy.core.scheduler.Scheduler", STAND_DOWN)
    crawler.settings.set("ITEM_PIPELINES", {}, STAND_DOWN)


def unknown_arguments_message(names: Sequence[str]) -> str:
    """What to say of spider arguments the spider does not take (with the known
    one each may be a misspelling of)."""
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, ARGUMENTS, n=1)
        parts.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return (
        f"unknown argument {', '.join(parts)}: the bfs spider takes "
        f"{', '.join(f'-a {a}=' for a in ARGUMENTS)}"
    )
