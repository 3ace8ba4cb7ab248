"""``scrapy frontier retry --failed [--host H]``: queue failed requests again.

A request that failed for good (crawler.policy.fates) is kept in its shard's
``failed`` hash with its entry, so it can be tried again as it was queued (callback,
meta, depth), past the seen filter that would refuse it as a link.
"""

from __future__ import annotations

import time
from typing import IO, TYPE_CHECKING

from crawler.commands.crawltarget import crawl_shards
from crawler.commands.steering import ControlError

if TYPE_CHECKING:
    import argparse

    import redis

    from crawler.crawlstate.keys import CrawlKeys


def add_retry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--failed",
        action="store_true",
        help="retry: queue again every request that failed for good",
    )
    parser.add_argument(
        "--host",
        metavar="HOST",
        help="retry: only the requests of HOST; web: the address to serve on "
        "(default DASHBOARD_HOST)",
    )


def retry(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Queue again the failed requests (of ``--host``); 1 if there were none."""
    if not opts.failed:
        raise ControlError("retry needs --failed: it re-queues requests that failed")
    try:
        # Queued again as the crawl ranks its queues, whatever this command's settings.
        shards = crawl_shards(client, keys, opts.settings)
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    host = opts.host.lower() if opts.host else None
    failed = shards.failed(host)
    count = shards.retry_failed(failed, time.time())
    where = f" of {host}" if host else ""
    out.write(
        f"{count} failed requests{where} of crawl {keys.prefix!r} queued again "
        f"(Redis {opts.redis_shown})\n"
    )
    return 0 if count else 1
