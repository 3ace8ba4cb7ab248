"""robots.txt (RFC 9309): the downloader middleware, the one download per origin
for the cluster, its record in Redis, the local cache and the link filter. The
pure rules (parsing, matching, fetch outcomes) are in ``crawler.policy``."""
