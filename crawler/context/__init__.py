"""The crawl context: what one crawl's components share (host delays, the Redis
outage tracker, run-time settings, the engine hooks, start-up failures), reached
with ``CrawlContext.of(crawler)``; no import of the add-on."""
