"""Our ``scrapy`` commands: ``frontier``, ``pages``, ``analyze``, ``crawl`` (Scrapy's,
with exit statuses that say what happened) and ``botauth`` (the Web Bot Auth key
directory to publish).

Scrapy finds them through the package's ``scrapy.commands`` entry points in any
project, and through ``COMMANDS_MODULE`` in this repository (every module here with a
``Command`` class is one; the others are their parts).
"""
