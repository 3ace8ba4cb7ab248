"""What ``scrapy crawl``'s exit status says happened, from the crawl's stats.

Scrapy's own ``scrapy crawl`` exits 0, 1 (a crawler that failed to start) or 2 (a
usage error); a crawl stopped by a second Ctrl-C, or one that could fetch nothing
at all, exits 0 there. A script or a scheduler (cron, systemd, CI) should tell them
apart, so our ``crawl`` command (``crawler.commands.crawl``) exits with these.

Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

# The crawl ran to its end, or was stopped cleanly (one Ctrl-C or SIGTERM: what is
# queued stays in the frontier, and the next crawl goes on with it).
FINISHED = 0
# It could not start: a bad setting or argument, an unreachable Redis, a directory
# it cannot write (one ERROR line says which).
STARTUP_FAILED = 1
# The command line is wrong (Scrapy's own: an unknown option, no spider name).
USAGE_ERROR = 2
# Requests were sent and not one response came back: every seed's host unknown,
# refusing connections or timing out.
NOTHING_FETCHED = 3
# Stopped before the spider was closed (Ctrl-C or SIGTERM twice): 128 + SIGINT, as
# a shell reports a process an interrupt ended.
FORCED_SHUTDOWN = 130


def crawl_exit_code(stats: Mapping[str, object], *, failed_to_start: bool) -> int:
    """The exit status of a crawl whose stats are *stats*; *failed_to_start* when
    it stopped at start (ours or Scrapy's bootstrap failure)."""
    if failed_to_start:
        return STARTUP_FAILED
    if "finish_reason" not in stats:  # the spider was never closed
        return FORCED_SHUTDOWN
    if _count(stats, "downloader/request_count") and not _count(
        stats, "downloader/response_count"
    ):
        return NOTHING_FETCHED
    return FINISHED


def _count(stats: Mapping[str, object], key: str) -> int:
    value = stats.get(key, 0)
    return value if isinstance(value, int) else 0
