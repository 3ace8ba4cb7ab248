"""scrapy-redis' settings this crawler ignores, and what replaces each.

One table serves the start-up warning (crawler/context/settingscheck.py) and
docs/migrating.md, whose rows say the same (tests/unit/test_settingnames.py checks
them against this). Each text is the doc's cell, Markdown and all; the warning
drops the backticks. The scrapy-redis settings that keep their meaning here
(``REDIS_URL``, ``REDIS_HOST``, ``REDIS_PORT``, ``REDIS_PARAMS``,
``DUPEFILTER_DEBUG``, ``REDIS_ITEMS_KEY`` for its pipeline) are not in it.
"""

from __future__ import annotations

_KEY_PREFIX = "`FRONTIER_KEY_PREFIX`"
_SEEN_FILTER = (
    "the frontier's own seen filter: `FRONTIER_DEDUP` = `bloom` (about 4 bytes a "
    "URL) or `exact`; `FRONTIER_DEDUP_CAPACITY`, `FRONTIER_DEDUP_ERROR_RATE`"
)
_START_URLS_AS = (
    "none: the seeds key is a list (a seed seen before is filtered anyway, so a "
    "set buys nothing)"
)
_BYTES = "none: the frontier reads bytes itself"

SCRAPY_REDIS_REPLACEMENTS: dict[str, str] = {
    # Seeds.
    "REDIS_START_URLS_KEY": (
        "the seeds list `<FRONTIER_KEY_PREFIX>:seeds` (the prefix defaults to the "
        "spider's name; every key of the crawl starts with it)"
    ),
    "REDIS_START_URLS_AS_SET": _START_URLS_AS,
    "REDIS_START_URLS_AS_ZSET": _START_URLS_AS,
    "REDIS_START_URLS_BATCH_SIZE": (
        "none: a node takes up to 1,000 seeds every `FRONTIER_MAINTENANCE_INTERVAL`"
    ),
    "MAX_IDLE_TIME_BEFORE_CLOSE": (
        "`FRONTIER_CLOSE_WHEN_DRAINED=False` waits for seeds for ever; `True` "
        "(default) closes when nothing is queued or in flight anywhere"
    ),
    # The scheduler.
    "SCHEDULER_PERSIST": (
        "`FRONTIER_PERSIST` (default **True**: a rerun resumes; "
        "`FRONTIER_RESET=True` starts over)"
    ),
    "SCHEDULER_FLUSH_ON_START": "`FRONTIER_RESET`",
    "SCHEDULER_QUEUE_CLASS": (
        "`FRONTIER_ORDER`: `bfs` (default, for `FifoQueue`: depth first, then "
        "priority, FIFO among equals) or `priority` (for `PriorityQueue`: Scrapy's "
        "order, priority first, then depth); no `LifoQueue`: a depth-first crawl "
        "would starve the politeness of all but one host"
    ),
    "SCHEDULER_QUEUE_KEY": _KEY_PREFIX,
    "SCHEDULER_DUPEFILTER_KEY": _KEY_PREFIX,
    "SCHEDULER_SERIALIZER": (
        "none: typed JSON only, so a crawl's state can never run code"
    ),
    "SCHEDULER_IDLE_BEFORE_CLOSE": "none: nodes wait for work without blocking Redis",
    # The duplicate filter.
    "DUPEFILTER_CLASS": _SEEN_FILTER,
    "SCHEDULER_DUPEFILTER_CLASS": _SEEN_FILTER,
    "DUPEFILTER_KEY": "none (the seen filter is per shard, under the prefix)",
    # The connection.
    "REDIS_ENCODING": _BYTES,
    "REDIS_DECODE_RESPONSES": _BYTES,
}
