"""Who the crawler says it is: its product token, its version and a contact URL.

Pure. A site owner who finds us in a log must be able to tell who we are and reach
us: every default User-Agent names ``<token>/<version>`` and ``+<contact>``
(``compatible; crawler/0.1.0; +https://...``), and robots.txt is fetched with the
bot's own User-Agent, never a browser's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.settings import BaseSettings

# Fields of the default USERAGENT_LIST entries (a list the user sets is used as is).
FIELDS = ("{token}", "{version}", "{contact}")
# A product token (RFC 9110 10.1.5 token, narrowed to what robots.txt lines name).
_PRODUCT_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
# Characters a contact URL cannot hold: it sits inside a User-Agent comment "(...)".
_FORBIDDEN = frozenset(' \t()\\"')


def token_of(settings: BaseSettings) -> str:
    """``ROBOTSTXT_USER_AGENT``, else ``BOT_NAME``; raises ``ValueError`` naming it
    if it is not a product token."""
    name = "ROBOTSTXT_USER_AGENT"
    token = str(settings.get(name) or "")
    if not token:
        name = "BOT_NAME (the robots.txt token while ROBOTSTXT_USER_AGENT is unset)"
        token = str(settings.get("BOT_NAME") or "")
    if not _PRODUCT_TOKEN.fullmatch(token):
        raise ValueError(
            f"{name} must be the crawler's product token (letters, "
            f"digits, '-' and '_', e.g. 'crawler'), got {token!r}"
        )
    return token


def contact_of(settings: BaseSettings) -> str:
    """``USERAGENT_CONTACT``; raises ``ValueError`` naming it if it is not an
    http(s) URL that fits in a User-Agent comment."""
    contact = settings.get("USERAGENT_CONTACT")
    if (
        not isinstance(contact, str)
        or not contact.startswith(("http://", "https://"))
        or any(c in _FORBIDDEN or ord(c) < 32 or ord(c) >= 127 for c in contact)
    ):
        raise ValueError(
            "USERAGENT_CONTACT must be an http(s) URL without spaces, quotes or "
            f"parentheses (a page saying who runs this crawler), got {contact!r}"
        )
    return contact


def bot_user_agent(token: str, version: str, contact: str) -> str:
    """The bot's own User-Agent, sent with robots.txt fetches: ``token/version
    (+contact)``."""
    return f"{token}/{version} (+{contact})"


def filled(
    templates: Iterable[str], *, token: str, version: str, contact: str
) -> tuple[str, ...]:
    """*templates* with ``{token}``, ``{version}`` and ``{contact}`` filled in."""
    values = dict(zip(FIELDS, (token, version, contact), strict=True))
    result = []
    for template in templates:
        entry = template
        for name, value in values.items():
            entry = entry.replace(name, value)
        result.append(entry)
    return tuple(result)
