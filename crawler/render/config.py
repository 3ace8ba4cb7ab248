"""The ``RENDER_*`` settings, read and checked once (a bad value stops start-up).

``RENDER_MODE`` says who decides that a page is rendered: ``never`` (only requests
whose ``meta["render"]`` is True), ``always`` (every page but those whose
``meta["render"]`` is False) or ``auto`` (the render advisor learns, per host and
URL pattern, where rendering finds links or text the static fetch does not).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from crawler.policy.typedsettings import get_choice, get_float, get_int, get_names

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy import Request
    from scrapy.settings import BaseSettings

RENDER_MODES = ("never", "always", "auto")
# What RENDER_BLOCK may name: requests to other hosts than the page's, and resource
# types as the browser reports them.
BLOCKABLE = ("third-party", "image", "font", "media", "stylesheet", "script", "fetch")
# Executables tried, in order, when RENDER_BROWSER is empty (Debian's first).
BROWSER_NAMES = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
)

Verdict = Literal["render", "static", "sample"]


class Advisor(Protocol):
    """Decides, in ``RENDER_MODE = auto``, whether a request is rendered.

    ``wants_render`` answers True to render it, False to fetch it statically. A
    request it picks as a sample is rendered with ``meta[RENDER_SAMPLE]`` and
    ``meta[RENDER_KEEP_STATIC]``: one browser fetch gives both the page as its host
    served it and the rendered page, which the render sampler compares. It may
    answer with an awaitable when it must ask Redis (a sample slot), never for a
    decided key.
    """

    def wants_render(self, request: Request) -> bool | Awaitable[bool]: ...


class BadRenderSetting(ValueError):
    """A ``RENDER_*`` setting with a value the crawler cannot use."""


@dataclass(frozen=True)
class RenderConfig:
    mode: str
    # Lazy-load actions run in order after the load: "scroll", a JavaScript
    # function's name (called where the page defines it), or a CSS selector waited for.
    actions: tuple[str, ...]
    timeout: float
    concurrency: int
    block: frozenset[str]
    max_pages_per_context: int
    settle: float
    # The browser's executable, or None when none was found (rendering unavailable).
    browser: str | None
    sample_pages: int
    recheck_interval: float
    min_gained_links: int
    min_gained_text: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RenderConfig:
        """Raises ``BadRenderSetting`` with a one-line reason."""
        try:
            return cls._read(settings)
        except ValueError as exc:  # the settings reader's: as the class callers catch
            raise BadRenderSetting(str(exc)) from None

    @classmethod
    def _read(cls, settings: BaseSettings) -> RenderConfig:
        """The config; the settings reader's ``ValueError`` on a bad value."""
        return cls(
            mode=get_choice(
                settings, "RENDER_MODE", RENDER_MODES, fold_case=True, default="never"
            ),
            actions=parse_actions(settings.get("RENDER_ACTION")),
            timeout=get_float(settings, "RENDER_TIMEOUT", above=0, note="seconds"),
            concurrency=get_int(settings, "RENDER_CONCURRENCY", at_least=1),
            block=frozenset(get_names(settings, "RENDER_BLOCK", allowed=BLOCKABLE)),
            max_pages_per_context=get_int(
                settings, "RENDER_MAX_PAGES_PER_CONTEXT", at_least=1
            ),
            settle=get_float(settings, "RENDER_SETTLE", at_least=0, note="seconds"),
            browser=find_browser(str(settings.get("RENDER_BROWSER") or "")),
            sample_pages=get_int(settings, "RENDER_SAMPLE_PAGES", at_least=1),
            recheck_interval=get_float(
                settings, "RENDER_RECHECK_INTERVAL", at_least=0, note="seconds"
            ),
            min_gained_links=get_int(settings, "RENDER_MIN_GAINED_LINKS", at_least=0),
            min_gained_text=get_float(settings, "RENDER_MIN_GAINED_TEXT", at_least=0),
        )


def parse_actions(value: object) -> tuple[str, ...]:
    """``RENDER_ACTION`` or ``meta["render_action"]``: one action, a list, or a JSON
    list (from ``-s``); empty for none."""
    if value is None or value == "":
        return ()
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise BadRenderSetting(f"RENDER_ACTION is not a JSON list: {exc}") from None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
        isinstance(item, str) for item in items
    ):
        raise BadRenderSetting(
            f"RENDER_ACTION must be an action or a list of them; got {value!r}"
        )
    return tuple(item.strip() for item in items if item.strip())


def find_browser(configured: str) -> str | None:
    """The browser to launch: RENDER_BROWSER if it is an executable (a path or a
    name on PATH), else the first of BROWSER_NAMES on PATH; None if there is none."""
    if configured:
        return shutil.which(configured)
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None
