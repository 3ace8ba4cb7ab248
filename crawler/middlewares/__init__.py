"""Downloader middlewares of the project (robots, User-Agent, timeouts)."""
