"""A user's Scrapy project that enables the frontier through its add-on only."""
