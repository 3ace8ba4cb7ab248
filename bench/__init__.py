"""Benchmark of the Redis frontier against plain Scrapy and scrapy-redis.

Run ``python -m bench.run --help``; results land in ``bench/out/`` (git-ignored).
"""
