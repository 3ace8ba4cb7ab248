"""Defaults of the log settings of ours (``LOG_*``): which libraries' DEBUG lines a
crawl prints, read by crawler/context/quietlogs.py. Scrapy's own ``LOG_LEVEL`` is
the project's choice (this repository's crawler/settings.py says INFO)."""

# Libraries' DEBUG lines (redis-py, asyncio, urllib3, playwright, psycopg, ...):
# False keeps them at INFO and above even with LOG_LEVEL=DEBUG, which then shows
# the crawler's and Scrapy's own; True lets them follow LOG_LEVEL.
LOG_LIBRARIES_DEBUG = False
