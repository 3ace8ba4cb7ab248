"""Placeholder: being written."""


class TrafficMiddleware:
    pass
