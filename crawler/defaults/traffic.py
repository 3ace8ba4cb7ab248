"""Defaults of the per-host traffic counters (``TRAFFIC_*``): how long an idle host's
counters are kept and how many hosts each ranking holds, read by
crawler/middlewares/traffic.py (and crawler/spiders/sitehistory.py for the site
strategy's counters)."""

# Seconds a host's traffic counters, its place in the rankings and its site-strategy
# counters are kept after its last fetch: a host idle this long costs no Redis memory
# (its robots.txt record and near-duplicate index expire on their own clocks).
TRAFFIC_IDLE_TTL = 86400
# Hosts each traffic ranking (requests, bytes, errors, failures) keeps: the top N,
# what `scrapy frontier hosts --top` and the dashboard can show.
TRAFFIC_RANK_SIZE = 1000
