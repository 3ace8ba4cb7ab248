"""A polite, breadth-first, distributed web crawler built on Scrapy and Redis."""

__version__ = "0.1.0"
