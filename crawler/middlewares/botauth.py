"""Web Bot Auth: every request signed with the bot's Ed25519 key (``BOT_AUTH_KEY``).

A site (or the CDN in front of it) can then tell this crawler's requests from
anyone else's carrying its User-Agent: each request gets ``Signature-Input`` and
``Signature`` (RFC 9421, label ``sig1``) covering its ``@authority`` and, with
``BOT_AUTH_DIRECTORY_URL``, the ``Signature-Agent`` that says where the public key
is published. What the headers hold, and which drafts say so, is in
``crawler.policy.botauth``; ``scrapy botauth`` prints the directory to publish.

Signed as late as a middleware can be (``crawler/addon.py``): after the User-Agent,
Referer, cookies and proxy are set and after the HTTP cache had its chance to answer,
so the request signed is the one that goes out. A redirect or a retry comes back
through the middlewares as a new request and is signed again, for its own authority
and with a fresh ``created`` (the answered request's signature is taken off first,
so no copy of it, in the frontier or not, carries a stale one); robots.txt fetches
go through the downloader too and are signed like any other request. Only http(s) requests are signed (``data:`` and
``file:`` leave nothing to sign for).

The key is read once at start from a file: a path, never the key itself in a
setting (settings are logged, shown by ``scrapy settings``, kept by scrapyd). It is
never logged; its ``keyid`` (the public key's thumbprint) is, once at start.
"""

from __future__ import annotations

import logging
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)
from scrapy.exceptions import NotConfigured

from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.policy.botauth import (
    MAX_VALIDITY,
    NONCE_BYTES,
    SIGNATURE_HEADERS,
    SigningKey,
    agent_origin,
    authority_of,
    signed_headers,
    thumbprint,
)
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# A key file is a few hundred bytes: anything much larger is not one.
MAX_KEY_FILE_BYTES = 64 * 1024
# How the base64 of every unencrypted Ed25519 PKCS#8 key begins (a PEM's body line
# pasted in place of the path).
ED25519_PKCS8_BASE64 = "MC4CAQAwBQYDK2Vw"
_KEY_HELP = "an Ed25519 private key in PEM (openssl genpkey -algorithm ed25519)"


@dataclass(frozen=True, slots=True)
class BotAuthConfig:
    """The Web Bot Auth settings, checked once at start-up (None: off)."""

    key: Ed25519PrivateKey = field(repr=False)
    agent: str | None  # the Signature-Agent origin
    validity: int  # whole seconds: ``expires`` is an integer

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BotAuthConfig | None:
        """The config, or None when ``BOT_AUTH_KEY`` is empty; ``ValueError`` with
        one line naming the bad setting (never holding key material)."""
        path = settings.get("BOT_AUTH_KEY") or ""
        if not isinstance(path, str | os.PathLike):
            raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
                "BOT_AUTH_KEY must be the path of a key file"
            )
        if not str(path).strip():
            return None
        validity = get_float(
            settings, "BOT_AUTH_VALIDITY", at_least=1, at_most=MAX_VALIDITY
        )
        url = settings.get("BOT_AUTH_DIRECTORY_URL") or ""
        try:
            agent = agent_origin(str(url)) if str(url).strip() else None
        except ValueError as exc:
            raise ValueError(f"BOT_AUTH_DIRECTORY_URL {exc}") from None
        return cls(load_key(str(path)), agent, math.ceil(validity))

    def signing_key(self) -> SigningKey:
        return SigningKey(self.key, thumbprint(public_bytes(self.key)))


def load_key(text: str) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file at *text*; ``ValueError`` says why
    not in one line, naming the file but never showing what it holds."""
    if "PRIVATE KEY" in text or "\n" in text or ED25519_PKCS8_BASE64 in text:
        raise ValueError(
            "BOT_AUTH_KEY must be the path of the key file, not the key itself "
            "(keep the key in a file only the crawler can read)"
        )
    path = Path(text.strip()).expanduser()
    try:
        with path.open("rb") as file:
            data = file.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(
            f"BOT_AUTH_KEY: cannot read {_shown(text)}: {exc.strerror or exc}"
        ) from None
    try:
        key = load_pem_private_key(data, password=None)
    except TypeError:  # encrypted: no password was given
        raise ValueError(
            f"BOT_AUTH_KEY: {str(path)!r} is encrypted; give it decrypted "
            "(openssl pkey -in it -out key.pem) in a file only the crawler can read"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"BOT_AUTH_KEY: {str(path)!r} is not {_KEY_HELP}") from None
    if not isinstance(key, Ed25519PrivateKey):
        kind = type(key).__name__.removesuffix("PrivateKey").removeprefix("_")  # RSA...
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"BOT_AUTH_KEY: {str(path)!r} is a {kind} key, and Web Bot Auth signs "
            f"with Ed25519: give {_KEY_HELP}"
        )
    _warn_if_others_can_read(path)
    return key


def _shown(text: str) -> str:
    """*text* quoted if it looks like a path; a value that does not (a key pasted
    in its place, say) is not repeated in the log."""
    if ("/" in text or "." in text) and len(text) <= 1024:
        return repr(text)
    return "the file named (not shown: a path has a / or a .)"


def public_bytes(key: Ed25519PrivateKey) -> bytes:
    """The raw 32 bytes of *key*'s public key."""
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _warn_if_others_can_read(path: Path) -> None:
    """One WARNING when the key file is readable by its group or others (as
    ssh refuses such a key, but a crawl does not stop for it)."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        logger.warning(
            "BOT_AUTH_KEY %(path)s can be read by other users (mode %(mode)s): "
            "chmod 600 it",
            {"path": str(path), "mode": oct(stat.S_IMODE(mode))},
        )


class BotAuthMiddleware:
    """Signs every http(s) request about to be downloaded (``botauth/signed``)."""

    def __init__(
        self,
        config: BotAuthConfig,
        stats: StatsCollector,
        once: OnceLogger,
        *,
        clock: Callable[[], float] = time.time,
        nonce: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._key = config.signing_key()
        self._agent = config.agent
        self._validity = config.validity
        self._stats = stats
        self._once = once
        self._clock = clock
        self._nonce = nonce

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware (``NotConfigured`` without ``BOT_AUTH_KEY``); with a bad
        setting, a stand-in that stops the crawl with one line."""
        try:
            config = BotAuthConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        if config is None:
            raise NotConfigured  # no message: Scrapy would log it as a WARNING
        assert crawler.stats is not None
        middleware = cls(config, crawler.stats, OnceLogger(logger, crawler))
        middleware._log_start()
        return middleware

    def process_request(self, request: Request) -> None:
        _unsign(request)  # a signature a spider or an earlier attempt left
        if not request.url.startswith(("http://", "https://")):
            return
        try:
            authority = authority_of(request.url)
        except ValueError:
            self._once.event(
                "botauth/unsigned",
                "A request not signed: its URL has no usable host (%(url)s); "
                "more are counted in botauth/unsigned",
                {"url": request.url[:200]},
            )
            return
        headers = signed_headers(
            self._key,
            authority=authority,
            agent=self._agent,
            created=int(self._clock()),
            validity=self._validity,
            nonce=self._nonce(NONCE_BYTES),
        )
        for name, value in headers.items():
            request.headers[name] = value
        self._stats.inc_value("botauth/signed")

    def process_response(self, request: Request, response: Response) -> Response:
        """The signature goes with its attempt: a redirect or retry copied from
        *request* (and stored in the frontier) carries none, so that a crawl resumed
        without ``BOT_AUTH_KEY`` never sends a stale one."""
        _unsign(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        _unsign(request)

    def _log_start(self) -> None:
        logger.info(
            "Signing requests (Web Bot Auth) with key %(keyid)s, valid %(validity)ds",
            {"keyid": self._key.keyid, "validity": self._validity},
        )
        if self._agent is None:
            logger.warning(
                "BOT_AUTH_DIRECTORY_URL is empty: requests are signed without "
                "Signature-Agent, so a site can verify them only with a public key "
                "it got some other way; set it to the origin serving the key "
                "directory (scrapy botauth prints it)"
            )


def _unsign(request: Request) -> None:
    for name in SIGNATURE_HEADERS:
        request.headers.pop(name, None)
