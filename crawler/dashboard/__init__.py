"""The live dashboard of a crawl (``scrapy frontier web``): its JSON state and
its HTTP server; the page itself is in ``static/``, shipped as package data."""
