"""Rotating User-Agent and Referer headers; the robots.txt token is never touched.

``USERAGENT_MODE`` draws a User-Agent from ``USERAGENT_LIST`` for every request
(``per-request``) or keeps one per host for ``USERAGENT_STICKY_TTL`` seconds
(``per-host``). ``REFERER_MODE`` keeps the Referer that Scrapy's spider-side
``RefererMiddleware`` set from the parent page (``parent``; the header is stored with
the request in the frontier), replaces it with one from ``REFERER_LIST``
(``rotate``) or removes it (``none``). robots.txt rules are matched against
``ROBOTSTXT_USER_AGENT``, never against these headers.

The project's default list names the bot in every entry (``compatible;
<ROBOTSTXT_USER_AGENT>/<version>; +<USERAGENT_CONTACT>``), so a site owner can tell
who we are; a list the user sets is sent exactly as given. The crawler's own
robots.txt fetches keep the bot's own User-Agent, set by RobotsMiddleware.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import random
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from crawler import __version__
from crawler import defaults as project_defaults
from crawler.context.startup import StartupFailure
from crawler.meta import ROBOTS_FETCH
from crawler.policy.botname import contact_of, filled, token_of
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.typedsettings import get_choice, get_float

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

UserAgentMode = Literal["per-request", "per-host"]
RefererMode = Literal["parent", "rotate", "none"]
# Hosts whose sticky User-Agent is remembered in "per-host" mode (least recently
# used first out): about 150 bytes each, the strings themselves are shared.
STICKY_HOSTS = 65_536
# A string setting read as a file path even when the file is missing (an error then).
_PATH_PREFIXES = ("/", "./", "../", "~")
_PATH_SUFFIXES = (".txt", ".list", ".lst", ".conf")


@dataclass(frozen=True, slots=True)
class UserAgentConfig:
    """The User-Agent and Referer settings, checked once at start-up."""

    user_agents: tuple[str, ...]
    mode: UserAgentMode
    sticky_ttl: float
    referer_mode: RefererMode
    referers: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> UserAgentConfig:
        """The config; raises ``ValueError`` with one line naming the bad setting."""
        mode = get_choice(settings, "USERAGENT_MODE", get_args(UserAgentMode))
        referer_mode = get_choice(settings, "REFERER_MODE", get_args(RefererMode))
        sticky_ttl = get_float(
            settings, "USERAGENT_STICKY_TTL", above=0, note="seconds"
        )
        user_agents = read_list(settings, "USERAGENT_LIST")
        contact = contact_of(settings)
        if settings.get("USERAGENT_LIST") == project_defaults.USERAGENT_LIST:
            user_agents = filled(
                user_agents,
                token=token_of(settings),
                version=__version__,
                contact=contact,
            )
        if not user_agents:
            raise ValueError(
                "USERAGENT_LIST is empty: give User-Agent strings (a list, a JSON or "
                "comma-separated string, or a file with one per line)"
            )
        referers: tuple[str, ...] = ()
        if referer_mode == "rotate":
            referers = read_list(settings, "REFERER_LIST")
            if not referers:
                raise ValueError(
                    'REFERER_LIST is empty but REFERER_MODE is "rotate": give '
                    "Referer URLs (a list, a string or a file), or another mode"
                )
            for referer in referers:
                if not referer.startswith(("http://", "https://")):
                    raise ValueError(
                        f"REFERER_LIST entries must be http(s) URLs, got {referer!r}"
                    )
        return cls(user_agents, mode, sticky_ttl, referer_mode, referers)


def read_list(settings: BaseSettings, name: str) -> tuple[str, ...]:
    """The entries of list setting *name*; raises ``ValueError`` naming it.

    A list (or tuple) is taken as is. A string is a file (one entry a line, blank
    lines and ``#`` comments ignored) when it names an existing file or looks like a
    path; else a JSON list when it starts with ``[``; else comma-separated, with
    commas inside parentheses kept, so ``(KHTML, like Gecko)`` is not split.
    Entries are stripped and blank ones dropped; control characters are refused,
    since each entry becomes a header value.
    """
    value = settings.get(name)
    if value is None:
        entries: list[object] = []
    elif isinstance(value, list | tuple):
        entries = list(value)
    elif isinstance(value, str | Path):
        entries = list(_entries_of_string(name, str(value)))
    else:
        raise ValueError(f"{name} must be a list or a string, got {value!r}")
    return _checked(name, entries)


def _entries_of_string(name: str, text: str) -> list[object]:
    stripped = text.strip()
    path = Path(stripped)
    with contextlib.suppress(RuntimeError):  # "~nobody/...": no such home
        path = path.expanduser()
    if _is_file(path) or stripped.startswith(_PATH_PREFIXES):
        return _file_entries(name, path)
    if stripped.endswith(_PATH_SUFFIXES) and " " not in stripped:
        return _file_entries(name, path)
    if stripped.startswith("["):
        try:
            parsed = json.loads(stripped)
        except ValueError as exc:
            raise ValueError(f"{name} is not a valid JSON list: {exc}") from None
        if not isinstance(parsed, list):
            raise ValueError(f"{name} must be a JSON list, got {stripped!r}")
        return parsed
    return list(split_outside_parentheses(stripped))


def _is_file(path: Path) -> bool:
    """Whether *path* is a file; a User-Agent string is not (nor a valid path)."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL character
        return False


def _file_entries(name: str, path: Path) -> list[object]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: cannot read {str(path)!r}: {exc}") from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def split_outside_parentheses(text: str) -> list[str]:
    """*text* split at commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for index, character in enumerate(text):
        if character == "(":
            depth += 1
        elif character == ")":
            depth = max(depth - 1, 0)
        elif character == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _checked(name: str, entries: list[object]) -> tuple[str, ...]:
    result = []
    for entry in entries:
        if not isinstance(entry, str):
            raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
                f"{name} entries must be strings, got {entry!r}"
            )
        if any(ord(character) < 32 or ord(character) == 127 for character in entry):
            raise ValueError(f"{name} entries must not hold control characters")
        if entry := entry.strip():
            result.append(entry)
    return tuple(result)


class StickyUserAgents:
    """Host -> (User-Agent, expiry), least recently used hosts forgotten first."""

    def __init__(self, ttl: float, capacity: int = STICKY_HOSTS) -> None:
        self._ttl = ttl
        self._capacity = capacity
        self._by_host: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._by_host)

    def get(self, host: str, *, now: float, draw: Callable[[], str]) -> str:
        """*host*'s User-Agent, a new one from *draw* if it has none or it expired."""
        found = self._by_host.get(host)
        if found is not None and found[1] > now:
            self._by_host.move_to_end(host)
            return found[0]
        user_agent = draw()
        self._by_host[host] = (user_agent, now + self._ttl)
        self._by_host.move_to_end(host)
        if len(self._by_host) > self._capacity:
            self._by_host.popitem(last=False)
        return user_agent


class UserAgentMiddleware:
    """Sets the User-Agent (and Referer) header of every request to download."""

    def __init__(
        self,
        config: UserAgentConfig,
        *,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        placeholder_contact: str = "",
    ) -> None:
        self._config = config
        # The placeholder contact, until it is warned about: at the first request
        # to a host on the network (a crawl of loopback test sites has no reader).
        self._placeholder_contact = placeholder_contact
        self._rng = rng or random.Random()  # noqa: S311 (variety, not secrets)
        self._clock = clock
        self._ours = frozenset(ua.encode("utf-8") for ua in config.user_agents)
        self._sticky = StickyUserAgents(config.sticky_ttl)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad setting, a stand-in that logs one line and
        closes the spider as soon as it opens (``scrapy crawl`` exits with 1)."""
        try:
            config = UserAgentConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        contact = crawler.settings.get("USERAGENT_CONTACT")
        placeholder = contact if contact == project_defaults.USERAGENT_CONTACT else ""
        return cls(config, placeholder_contact=placeholder)

    def process_request(self, request: Request) -> None:
        if self._placeholder_contact:
            self._warn_of_placeholder(request.url)
        self._set_user_agent(request)
        mode = self._config.referer_mode
        if mode == "rotate":
            request.headers[b"Referer"] = self._rng.choice(self._config.referers)
        elif mode == "none":
            request.headers.pop(b"Referer", None)

    def _set_user_agent(self, request: Request) -> None:
        """A User-Agent the spider set itself is kept; one of ours (from an earlier
        attempt, stored with the request) is drawn again, as the mode says. The
        crawler's own robots.txt fetches keep the bot's User-Agent."""
        if request.meta.get(ROBOTS_FETCH):
            return
        current = request.headers.get(b"User-Agent")
        if current is not None and current not in self._ours:
            return
        if self._config.mode == "per-host":
            user_agent = self._sticky.get(
                _host_key(request.url), now=self._clock(), draw=self._draw
            )
        else:
            user_agent = self._draw()
        request.headers[b"User-Agent"] = user_agent

    def _warn_of_placeholder(self, url: str) -> None:
        """Once, at the first request to a host off this machine: the contact in
        every User-Agent is the placeholder, which tells site owners nothing."""
        if _on_this_machine(_host_key(url)):
            return
        logger.warning(
            "USERAGENT_CONTACT is the placeholder %(contact)s: set it to a page "
            "saying who runs this crawler and how to reach them (site owners see "
            "it in every User-Agent)",
            {"contact": self._placeholder_contact},
        )
        self._placeholder_contact = ""

    def _draw(self) -> str:
        return self._rng.choice(self._config.user_agents)


def _host_key(url: str) -> str:
    """The host a User-Agent sticks to; URLs without one (``data:``) share ``""``."""
    try:
        return host_of(url)
    except BadURLError:
        return ""


def _on_this_machine(host: str) -> bool:
    """Whether *host* is this machine (``localhost``, a loopback address) or no
    host at all (``data:``): nobody else reads the User-Agent sent there."""
    if host in ("", "localhost"):
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return False
