"""Defaults of the revisit settings (``REVISIT_*``): the policy, its intervals and the
feeder of the URL library, read by crawler/policy/revisitconfig.py for
crawler/revisit/ and crawler/records/."""

# How fetched pages are fetched again (docs/revisits.md): "off" (each URL once, the
# crawl ends when the frontier drains), "uniform" (every REVISIT_INTERVAL), "adaptive"
# (each page by its own estimated change rate, the same budget as uniform) or
# "halving" (halve the interval on a change, double it otherwise: a baseline). Any
# other needs RECORDS_DATABASE_URL and keeps the crawl running.
REVISIT_POLICY = "off"
# Seconds: uniform's interval, a new page's first, and adaptive's budget (as many
# fetches as uniform at this interval, shared out by change rate).
REVISIT_INTERVAL = 86400.0
# Shortest interval, seconds (adaptive and halving): a fast changer's. None:
# REVISIT_INTERVAL / 24 (an hour for a day's interval).
REVISIT_MIN_INTERVAL: float | None = None
# Longest interval, seconds: where a lazy page (no change seen) drifts. None:
# 14 x REVISIT_INTERVAL (two weeks for a day's interval).
REVISIT_MAX_INTERVAL: float | None = None
# Intervals or bounds by domain suffix, the longest match wins (a dict, or JSON with
# -s): {".gov": {"interval": 604800}, "news.example": {"min_interval": 600}}.
REVISIT_OVERRIDES: dict[str, dict[str, float]] | str = {}
# Consecutive failed revisits (404, 410 or any final failure) after which a page is
# recorded gone and no longer revisited.
REVISIT_GONE_AFTER = 3
# Seconds between two looks of a node's feeder for due URLs in the database. None:
# 2 s, or half the shortest REVISIT_MIN_INTERVAL (overrides too) when that is shorter.
REVISIT_FEED_INTERVAL: float | None = None
# Most URLs claimed for a revisit and not yet recorded, crawl-wide: what Redis holds
# of the URL library at most.
REVISIT_FEED_BATCH = 1000
# Seconds after which a claimed URL whose revisit was never recorded (its request
# lost) may be claimed again.
REVISIT_CLAIM_TIMEOUT = 3600.0
# Send If-None-Match and If-Modified-Since from the stored validators: an unchanged
# page then costs a 304, without body, page-store write or link extraction.
REVISIT_CONDITIONAL = True
# SimHash bits (of 64) a revisited page's text may move by and still count as
# unchanged for its change rate: a ticking clock or a rotated advert is no change.
# 0: every byte change counts.
REVISIT_CHANGE_THRESHOLD = 6
# Least factor on a host's revisit intervals when its pages change at most revisits
# (a fast site's pages come back sooner).
REVISIT_SITE_MIN_FACTOR = 0.5
# Most factor on a host's revisit intervals when its pages rarely change (a lazy
# site's pages drift to longer intervals together).
REVISIT_SITE_MAX_FACTOR = 4.0
# Revisits of a host's pages, in all, before its factor moves from 1.0.
REVISIT_SITE_MIN_VISITS = 20
