"""Defaults of retry-later (``RETRY_LATER_*``): the delays of the later tries of a
request whose failure may pass, read by crawler/policy/holdtimes.py and
crawler/middlewares/retrylater.py."""

# Seconds before each later try of a request whose failure may pass (robots.txt
# unreachable, DNS, refused or reset connections, timeouts on every tier, 429, 5xx),
# after Scrapy's immediate retries; a longer Retry-After wins. Held requests keep the
# crawl open. After the last, the failure is final. Empty: no later tries.
RETRY_LATER_DELAYS: list[float] | str = [30, 300, 1800]
