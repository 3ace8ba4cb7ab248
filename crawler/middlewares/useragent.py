"""Placeholder: being written."""


class UserAgentMiddleware:
    pass
