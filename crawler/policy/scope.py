"""Which links a crawl follows, and what counts as a seed URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from crawler.policy.hosts import BadURLError, host_of, registered_domain

SCOPES = ("any", "seed-hosts", "seed-domains")


def parse_seed(line: str) -> str | None:
    """The seed URL on *line*; None for a blank line or ``#`` comment.

    Raises ``ValueError`` saying what is wrong with anything that is not an
    absolute http(s) URL with a host.
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    scheme = urlsplit(text).scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"{text!r} is not an http(s) URL")
    try:
        host_of(text)
    except BadURLError as exc:
        raise ValueError(str(exc)) from None
    return text


class Scope:
    """``any`` follows every link; ``seed-hosts`` and ``seed-domains`` stay home."""

    def __init__(self, name: str, seeds: list[str]) -> None:
        if name not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {name!r}")
        self.name = name
        hosts = {host_of(url) for url in seeds}
        self._hosts = hosts
        self._domains = {registered_domain(host) for host in hosts}

    def allows(self, url: str) -> bool:
        if self.name == "any":
            return True
        try:
            host = host_of(url)
        except BadURLError:
            return False
        if self.name == "seed-hosts":
            return host in self._hosts
        return registered_domain(host) in self._domains
