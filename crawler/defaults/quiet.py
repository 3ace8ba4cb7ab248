"""Defaults of the quiet-logs settings (``QUIET_*``): which libraries' DEBUG lines a
crawl prints, read by crawler/context/quietlogs.py. Scrapy's own ``LOG_LEVEL`` is
the project's choice (this repository's crawler/settings.py says INFO)."""

# True keeps libraries' DEBUG lines (redis-py, asyncio, urllib3, playwright,
# psycopg, ...) out even at LOG_LEVEL=DEBUG, which then shows the crawler's and
# Scrapy's own; False lets them follow LOG_LEVEL.
QUIET_LIBRARIES = True
