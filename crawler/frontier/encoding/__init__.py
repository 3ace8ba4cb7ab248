"""The request codec: a Scrapy ``Request`` to compact JSON and back, rejecting
anything it did not write (no pickle)."""
