"""Defaults of the robots.txt settings (``ROBOTS_*``): how long a robots.txt is
shared, how long its fetch may take and what an unreachable one means, read by
crawler/robots/middleware.py."""

# Seconds a fetched robots.txt is shared by every node before it is fetched again.
ROBOTS_CACHE_TTL = 86400
# Seconds one robots.txt request (each redirect hop) may take; past it, the host counts
# as unreachable (see ROBOTS_ERROR_RETRY_DELAY).
ROBOTS_FETCH_TIMEOUT = 30.0
# Seconds before a robots.txt that failed (5xx, 429, timeout, network error) is tried
# again; until then its host is treated as disallowed.
ROBOTS_ERROR_RETRY_DELAY = 600
# Days a robots.txt may stay unreachable before its last good copy (or, without one,
# no restrictions) is used, as RFC 9309 allows.
ROBOTS_ERROR_GIVE_UP_DAYS = 30
# Longest Crawl-delay (seconds) a robots.txt may impose on the frontier.
ROBOTS_MAX_CRAWL_DELAY = 60.0
