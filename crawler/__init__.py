"""A polite, breadth-first, distributed web crawler built on Scrapy and Redis."""

# The version of the distribution (scrapy-polite-frontier), of the User-Agent's
# product token and of each node's registry entry: pyproject.toml reads it from here.
__version__ = "0.11.0"
