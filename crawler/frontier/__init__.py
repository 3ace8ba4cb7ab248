"""The Redis-backed frontier: Scrapy sees only ``scheduler.FrontierScheduler``."""
