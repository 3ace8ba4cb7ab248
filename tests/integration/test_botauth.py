"""Web Bot Auth in whole crawls: every request a site receives, robots.txt and a
redirect to another host included, verifies under an independent RFC 9421 verifier
(the http-message-signatures package) with the key ``scrapy botauth`` publishes;
without BOT_AUTH_KEY nothing is signed; a key that cannot be used stops start-up.

The site records each request's header lines as they arrived, so what is verified
is what went over the wire, never the crawler's own account of it.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import http_sf
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from http_message_signatures import (
    HTTPMessageVerifier,
    InvalidSignature,
    MappingKeyResolver,
    algorithms,
)
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl
from tests.servers import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

ADDRESSES = ("127.0.0.23", "127.0.0.24")
AGENT = "https://bot.example"
ROBOTS = b"User-agent: *\nAllow: /\n"
# (host index, path) -> links as (host index, path); "/away" redirects to host 1.
PAGES: dict[tuple[int, str], list[tuple[int, str]]] = {
    (0, "/"): [(0, "/a"), (0, "/away")],
    (0, "/a"): [(0, "/b")],
    (0, "/b"): [],
    (1, "/"): [(1, "/c")],
    (1, "/c"): [],
    (1, "/landing"): [],  # linked from nowhere: reached through the redirect only
}
REDIRECTS = {(0, "/away"): (1, "/landing")}
SIGNATURE_HEADERS = ("signature", "signature-input", "signature-agent")


@dataclass(frozen=True)
class Received:
    """One request as the site got it: its header lines in order, as sent."""

    host: int
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        found = [v for k, v in self.headers if k.lower() == name]
        assert len(found) <= 1, (name, found)
        return found[0] if found else None


@dataclass
class Message:
    """A request as http_message_signatures reads it: the URL the Host names."""

    method: str
    url: str
    headers: dict[str, str]


def message_of(received: Received, **changes: str) -> Message:
    headers = dict(received.headers) | changes
    host = headers.get("Host") or headers["host"]
    return Message(received.method, f"http://{host}{received.path}", headers)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Any = self.server
        server.received.append(
            Received(server.index, "GET", self.path, tuple(self.headers.items()))
        )
        key = (server.index, self.path)
        if self.path == "/robots.txt":
            self._answer(200, ROBOTS, "text/plain")
        elif key in REDIRECTS:
            target, path = REDIRECTS[key]
            self.send_response(302)
            self.send_header("Location", f"{server.bases[target]}{path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif key in PAGES:
            hrefs = "".join(
                f'<a href="{server.bases[i]}{path}">{path}</a>'
                for i, path in PAGES[key]
            )
            self._answer(
                200, f"<html><body>{hrefs}</body></html>".encode(), "text/html"
            )
        else:
            self._answer(404, b"not found", "text/plain")

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def recording_site() -> Iterator[tuple[list[str], list[Received]]]:
    """Serve PAGES on ADDRESSES; yields each host's base URL and what arrived."""
    received: list[Received] = []
    servers = [ThreadingHTTPServer((address, 0), _Handler) for address in ADDRESSES]
    bases = [
        f"http://{a}:{s.server_address[1]}"
        for a, s in zip(ADDRESSES, servers, strict=True)
    ]
    for index, server in enumerate(servers):
        server.index, server.bases, server.received = index, bases, received  # type: ignore[attr-defined]
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield bases, received
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def write_key(tmp_path: Path, key: Any) -> str:
    path = tmp_path / "bot.pem"
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    path.write_bytes(pem)
    path.chmod(0o600)
    return str(path)


def published_directory(key_path: str) -> dict[str, Any]:
    """What ``scrapy botauth`` prints for the key: the directory a site fetches."""
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "botauth", "--key", key_path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rfc_7638_thumbprint(public: bytes) -> str:
    """By hand: the required members sorted, no white space, SHA-256."""
    canonical = '{"crv":"Ed25519","kty":"OKP","x":"' + b64url(public) + '"}'
    return b64url(hashlib.sha256(canonical.encode()).digest())


def verifier_from(directory: dict[str, Any]) -> HTTPMessageVerifier:
    """A verifier holding the directory's keys, by kid (as a site resolves them)."""
    keys = {
        jwk["kid"]: ed25519.Ed25519PublicKey.from_public_bytes(
            base64.urlsafe_b64decode(jwk["x"] + "==")
        )
        for jwk in directory["keys"]
    }
    resolver = MappingKeyResolver(public_keys=keys, private_keys={})
    return HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=resolver
    )


async def crawl(values: dict[str, Any]) -> tuple[Any, list[str], list[Received]]:
    with recording_site() as (bases, received):
        crawler = get_crawler(BfsSpider, values)
        seeds = ",".join(f"{base}/" for base in bases)
        await crawler.crawl_async(seeds=seeds, scope="seed-hosts")
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler, bases, list(received)


def expected_requests() -> set[tuple[int, str]]:
    robots = {(0, "/robots.txt"), (1, "/robots.txt")}
    return set(PAGES) | set(REDIRECTS) | robots


@deferred_f_from_coro_f
async def test_every_request_the_site_receives_verifies(settings, tmp_path):
    key = ed25519.Ed25519PrivateKey.generate()
    path = write_key(tmp_path, key)
    directory = published_directory(path)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    keyid = rfc_7638_thumbprint(public)
    assert [(jwk["kid"], jwk["x"]) for jwk in directory["keys"]] == [
        (keyid, b64url(public))
    ]
    started = int(time.time())
    values = settings(
        ROBOTSTXT_OBEY=True, BOT_AUTH_KEY=path, BOT_AUTH_DIRECTORY_URL=AGENT
    )
    crawler, bases, received = await crawl(values)
    finished = int(time.time())
    assert {(r.host, r.path) for r in received} == expected_requests()
    assert crawler.stats.get_value("botauth/signed") == len(received)
    verifier = verifier_from(directory)
    nonces = set()
    for request in received:
        [result] = verifier.verify(
            message_of(request),
            expect_tag="web-bot-auth",
            require_components=("@authority", '"signature-agent";key="sig1"'),
            max_age=datetime.timedelta(minutes=5),
        )
        authority = bases[request.host].removeprefix("http://")
        assert result.covered_components['"@authority"'] == authority, request
        assert request.header("signature-agent") == f'sig1="{AGENT}"'
        params = result.parameters
        assert params["keyid"] == keyid
        assert params["alg"] == "ed25519"
        assert started <= params["created"] <= finished
        assert params["expires"] == params["created"] + 300
        nonces.add(base64.urlsafe_b64decode(params["nonce"] + "=="))
        [label] = http_sf.parse(
            request.header("signature-input").encode(), tltype="dictionary"
        )
        assert label == "sig1"
    assert len(nonces) == len(received)
    assert {len(nonce) for nonce in nonces} == {64}


@deferred_f_from_coro_f
async def test_a_tampered_request_fails_to_verify(settings, tmp_path):
    """The control: the verifier above refuses what was not signed so."""
    key = ed25519.Ed25519PrivateKey.generate()
    path = write_key(tmp_path, key)
    directory = published_directory(path)
    values = settings(BOT_AUTH_KEY=path, BOT_AUTH_DIRECTORY_URL=AGENT)
    _, bases, received = await crawl(values)
    [landing] = [r for r in received if r.path == "/landing"]
    verifier = verifier_from(directory)
    assert verifier.verify(message_of(landing), expect_tag="web-bot-auth")
    other_host = bases[0].removeprefix("http://")
    tampered = [
        message_of(landing, Host=other_host),  # replayed to another authority
        message_of(landing, **{"Signature-Agent": 'sig1="https://evil.example"'}),
        message_of(landing, Signature=received[0].header("signature") or ""),
    ]
    for message in tampered:
        with pytest.raises(InvalidSignature):
            verifier.verify(message, expect_tag="web-bot-auth")
    # And a key the directory does not list verifies nothing.
    stranger = ed25519.Ed25519PrivateKey.generate()
    public = stranger.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    wrong = {"keys": [{**directory["keys"][0], "x": b64url(public)}]}
    with pytest.raises(InvalidSignature):
        verifier_from(wrong).verify(message_of(landing), expect_tag="web-bot-auth")


@deferred_f_from_coro_f
async def test_without_a_key_no_request_is_signed(settings):
    crawler, _, received = await crawl(settings(ROBOTSTXT_OBEY=True))
    assert {(r.host, r.path) for r in received} == expected_requests()
    for request in received:
        sent = {name.lower() for name, _ in request.headers}
        assert not sent & set(SIGNATURE_HEADERS), request
    assert crawler.stats.get_value("botauth/signed") is None


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("missing", ["BOT_AUTH_KEY", "cannot read", "missing.pem"]),
        ("rsa", ["BOT_AUTH_KEY", "RSA key", "Ed25519"]),
    ],
)
def test_a_key_that_cannot_be_used_stops_the_crawl_in_one_line(tmp_path, kind, words):
    if kind == "rsa":
        path = write_key(tmp_path, rsa.generate_private_key(65537, 2048))
    else:
        path = str(tmp_path / "missing.pem")
    result = scrapy_crawl(
        tmp_path, "-a", "seeds=http://127.0.0.2:9/", BOT_AUTH_KEY=path
    )
    assert_one_line_stop(result, *words)
