"""Defaults of the Redis connection settings (``REDIS_*``): which server holds the
crawl's state, read by crawler/crawlstate/. Unprefixed: they are scrapy-redis' names."""

# redis://[:password@]host:port/db or rediss://...; empty starts a private Redis server.
REDIS_URL = ""
# True: REDIS_URL is a Redis Cluster node; False: the server is asked (INFO cluster).
REDIS_CLUSTER = False
# scrapy-redis' way to name the server (redis://HOST:PORT); empty/None: REDIS_URL's.
REDIS_HOST = ""
# Port of REDIS_HOST (None: 6379); refused if REDIS_URL names another server.
REDIS_PORT = None
# redis-py client keyword arguments (a dict, or JSON with -s), e.g. {"password": "..."}.
REDIS_PARAMS: dict[str, object] = {}
