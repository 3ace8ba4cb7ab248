"""crawler/middlewares/botauth.py: BOT_AUTH_* read once, bad values one line that
never shows key material; each request signed afresh, http(s) only."""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import TYPE_CHECKING, Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler import defaults
from crawler.context.startup import StartupFailure
from crawler.middlewares.botauth import BotAuthConfig, BotAuthMiddleware
from crawler.policy.botauth import SIGNATURE_HEADERS

if TYPE_CHECKING:
    from pathlib import Path


def pem(
    key: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey, password: bytes = b""
) -> bytes:
    encryption = BestAvailableEncryption(password) if password else NoEncryption()
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption)


def key_file(tmp_path: Path, data: bytes, mode: int = 0o600) -> str:
    path = tmp_path / "bot.pem"
    path.write_bytes(data)
    path.chmod(mode)
    return str(path)


def config(**values: object) -> BotAuthConfig | None:
    settings = {
        "BOT_AUTH_KEY": defaults.BOT_AUTH_KEY,
        "BOT_AUTH_DIRECTORY_URL": defaults.BOT_AUTH_DIRECTORY_URL,
        "BOT_AUTH_VALIDITY": defaults.BOT_AUTH_VALIDITY,
        **values,
    }
    return BotAuthConfig.from_settings(settings)  # type: ignore[arg-type]


def independent_keyid(key: ed25519.Ed25519PrivateKey) -> str:
    """RFC 7638 by hand: the sorted required members, no white space, SHA-256."""
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    canonical = '{"crv":"Ed25519","kty":"OKP","x":"' + x + '"}'
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_off_by_default():
    assert defaults.BOT_AUTH_KEY == ""
    assert config() is None


def test_a_key_file_gives_the_config(tmp_path):
    key = ed25519.Ed25519PrivateKey.generate()
    found = config(
        BOT_AUTH_KEY=key_file(tmp_path, pem(key)),
        BOT_AUTH_DIRECTORY_URL="https://Bot.Example/",
        BOT_AUTH_VALIDITY="60.5",
    )
    assert found is not None
    assert found.agent == "https://bot.example"
    assert found.validity == 61
    assert found.signing_key().keyid == independent_keyid(key)
    assert "PRIVATE" not in repr(found)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: str(p / "missing.pem"), ["BOT_AUTH_KEY", "cannot read", "missing"]),
        (str, ["BOT_AUTH_KEY", "cannot read"]),  # a directory
        (
            lambda p: key_file(p, pem(rsa.generate_private_key(65537, 2048))),
            ["BOT_AUTH_KEY", "RSA key", "Ed25519"],
        ),
        (
            lambda p: key_file(p, pem(ed25519.Ed25519PrivateKey.generate(), b"pw")),
            ["BOT_AUTH_KEY", "encrypted"],
        ),
        (
            lambda p: key_file(p, b"-----BEGIN NOTHING-----\n"),
            ["BOT_AUTH_KEY", "is not an Ed25519 private key in PEM"],
        ),
    ],
)
def test_a_key_that_cannot_be_used_is_one_line_naming_the_setting(
    tmp_path, make, words
):
    with pytest.raises(ValueError) as raised:  # noqa: PT011 (words checked below)
        config(BOT_AUTH_KEY=make(tmp_path))
    message = str(raised.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_the_key_itself_in_the_setting_is_refused_without_showing_it():
    secret = pem(ed25519.Ed25519PrivateKey.generate()).decode()
    for value in (secret, secret.splitlines()[1]):  # whole, or its base64 line
        with pytest.raises(ValueError) as raised:  # noqa: PT011 (checked below)
            config(BOT_AUTH_KEY=value)
        message = str(raised.value)
        assert "BOT_AUTH_KEY" in message
        assert secret.splitlines()[1] not in message


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"BOT_AUTH_VALIDITY": 0}, r"BOT_AUTH_VALIDITY must be in \[1, 86400\], got 0"),
        (
            {"BOT_AUTH_VALIDITY": 86401},
            r"BOT_AUTH_VALIDITY must be in \[1, 86400\], got 86401",
        ),
        ({"BOT_AUTH_VALIDITY": "soon"}, "BOT_AUTH_VALIDITY must be a number"),
        ({"BOT_AUTH_DIRECTORY_URL": "http://bot.example"}, "BOT_AUTH_DIRECTORY_URL"),
        ({"BOT_AUTH_DIRECTORY_URL": "https://bot.example/keys"}, "origin"),
    ],
)
def test_bad_values_name_their_setting(tmp_path, values, words):
    path = key_file(tmp_path, pem(ed25519.Ed25519PrivateKey.generate()))
    with pytest.raises(ValueError, match=words):
        config(BOT_AUTH_KEY=path, **values)


def test_a_key_others_can_read_is_warned_of(tmp_path, caplog):
    path = key_file(tmp_path, pem(ed25519.Ed25519PrivateKey.generate()), 0o644)
    with caplog.at_level(logging.WARNING):
        assert config(BOT_AUTH_KEY=path) is not None
    [record] = caplog.records
    assert "chmod 600" in record.getMessage()


# --- The middleware --------------------------------------------------------------


def middleware(tmp_path: Path, **values: object) -> tuple[Any, Any]:
    own = {k: getattr(defaults, k) for k in dir(defaults) if k.startswith("BOT_AUTH")}
    crawler = get_crawler(settings_dict={**own, **values})
    return build_from_crawler(BotAuthMiddleware, crawler), crawler


def test_without_a_key_the_middleware_is_not_installed(tmp_path):
    with pytest.raises(NotConfigured):
        middleware(tmp_path)


def test_a_bad_key_stops_the_crawl_with_one_line(tmp_path):
    found, _ = middleware(tmp_path, BOT_AUTH_KEY=str(tmp_path / "nope.pem"))
    assert isinstance(found, StartupFailure)


def test_each_request_is_signed_afresh_and_only_http_ones(tmp_path):
    path = key_file(tmp_path, pem(ed25519.Ed25519PrivateKey.generate()))
    found, crawler = middleware(
        tmp_path, BOT_AUTH_KEY=path, BOT_AUTH_DIRECTORY_URL="https://bot.example"
    )
    assert isinstance(found, BotAuthMiddleware)
    request = Request("http://127.0.0.2:8080/a")
    found.process_request(request)
    first = request.headers.getlist("Signature")
    assert len(first) == 1
    assert request.headers["Signature-Agent"] == b'sig1="https://bot.example"'
    # A redirect made from a request still signed (a spider's own copy): signed
    # again, its old signature replaced.
    moved = request.replace(url="https://127.0.0.3/b")
    found.process_request(moved)
    assert len(moved.headers.getlist("Signature")) == 1
    assert moved.headers.getlist("Signature") != first
    # Once answered (or failed), the request keeps no signature for the copies that
    # redirects and retries make of it, and the frontier stores.
    response = HtmlResponse(request.url, request=request)
    assert found.process_response(request, response) is response
    found.process_exception(moved, TimeoutError())
    for done in (request, moved, request.replace(url="http://127.0.0.3/c")):
        assert not any(name in done.headers for name in SIGNATURE_HEADERS)
    for url in ("data:,hello", "http:///no-host"):
        other = Request(url, headers={"Signature": "sig1=:AA==:"})
        found.process_request(other)
        assert not any(
            name in other.headers for name in ("Signature", "Signature-Input")
        )
    assert crawler.stats.get_value("botauth/signed") == 2
    assert crawler.stats.get_value("botauth/unsigned") == 1
