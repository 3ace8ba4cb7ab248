"""Placeholder: being written."""


class RobotsMiddleware:
    pass
