"""Downloader middlewares of the crawl itself: retry-later holds, depth repair from
the page store, User-Agent and Referer, timeout tiers, sizes, host health, traffic,
WARC and each page's content signals. robots.txt's is in ``crawler.robots``,
rendering's in ``crawler.render``."""
