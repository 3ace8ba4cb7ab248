"""Web Bot Auth: the headers that sign a request, and the key directory to publish.

Pure: the key signs (Ed25519 is deterministic), the caller gives the time and the
nonce's random bytes. What is followed, and why:

- RFC 9421 (HTTP Message Signatures): the signature base (section 2.5), the
  ``@authority`` component (2.2.3: the host in lower case, the scheme's default port
  left out), a Dictionary member as a component (``"signature-agent";key="sig1"``,
  2.1.2), ``Signature-Input`` and ``Signature`` under one label (4.1, 4.2), and
  ``alg="ed25519"`` (3.3.6).
- draft-meunier-webbotauth-httpsig-protocol (-02, the successor of
  draft-meunier-web-bot-auth-architecture, which took in
  draft-meunier-http-message-signatures-directory): cover ``@authority``; give
  ``created``, ``expires`` (at most 24 hours later), ``keyid`` (the key's RFC 7638
  JWK SHA-256 thumbprint, base64url, as RFC 8037 appendix A.3 gives it for Ed25519)
  and ``tag="web-bot-auth"``. ``Signature-Agent`` is a Dictionary (since
  architecture-04): its member keyed by the signature's label holds the origin
  whose ``/.well-known/http-message-signatures-directory`` serves the keys, and the
  signature covers that member. A ``nonce`` of 64 random bytes, base64url: the
  drafts up to architecture-05 and protocol-00 say SHOULD; protocol-02 leaves
  nonces to RFC 9421 (7.2.2), where sending one is always allowed.
- The directory is a JWK Set whose keys carry ``kid`` = that thumbprint.

Parameters are written in the drafts' test vectors' order (created, keyid, alg,
expires, nonce, tag), so those vectors are this module's tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

LABEL = "sig1"
TAG = "web-bot-auth"
ALGORITHM = "ed25519"
DIRECTORY_PATH = "/.well-known/http-message-signatures-directory"
DIRECTORY_MEDIA_TYPE = "application/http-message-signatures-directory+json"
# The headers a signed request carries (and an unsigned copy must not).
SIGNATURE_HEADERS = ("Signature", "Signature-Input", "Signature-Agent")
# Longest validity the drafts recommend (RECOMMENDED: no more than 24 hours).
MAX_VALIDITY = 86_400
NONCE_BYTES = 64
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ED25519_PUBLIC_KEY_BYTES = 32


class Signer(Protocol):
    """What signs: an Ed25519 private key of ``cryptography``."""

    def sign(self, data: bytes, /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The bot's key: what signs, and the public key's thumbprint (its ``keyid``)."""

    signer: Signer
    keyid: str


def base64url(data: bytes) -> str:
    """*data* in base64url without padding (RFC 7515's, as JWKs spell bytes)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def public_jwk(public_key: bytes) -> dict[str, str]:
    """The JWK of a raw 32-byte Ed25519 public key (RFC 8037 section 2)."""
    if len(public_key) != _ED25519_PUBLIC_KEY_BYTES:
        raise ValueError(f"an Ed25519 public key is 32 bytes, got {len(public_key)}")
    return {"kty": "OKP", "crv": "Ed25519", "x": base64url(public_key)}


def thumbprint(public_key: bytes) -> str:
    """The RFC 7638 SHA-256 thumbprint of the key's JWK, base64url: the required
    members in lexical order, no white space (RFC 8037 appendix A.3)."""
    canonical = json.dumps(
        public_jwk(public_key), sort_keys=True, separators=(",", ":")
    )
    return base64url(hashlib.sha256(canonical.encode("ascii")).digest())


def directory(public_keys: Iterable[bytes]) -> dict[str, list[dict[str, str]]]:
    """The key directory (a JWK Set) to serve at ``DIRECTORY_PATH`` with the media
    type ``DIRECTORY_MEDIA_TYPE``: each key with ``kid`` = its thumbprint."""
    keys = [
        {**public_jwk(key), "kid": thumbprint(key), "use": "sig"} for key in public_keys
    ]
    return {"keys": keys}


def authority_of(url: str) -> str:
    """``@authority`` of a request to *url* (RFC 9421 section 2.2.3): its host in
    lower case, with its port unless the scheme's default. ``ValueError`` for a URL
    that is not http(s) with a host, or whose host or port is malformed."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = parts.hostname  # lower case, user info and IPv6 brackets taken off
    port = parts.port  # ValueError when it is not a number in range
    if not host or not _printable(host) or " " in host:
        raise ValueError(f"no usable host in {url!r}")
    if ":" in host:
        host = f"[{host}]"
    return host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"


def agent_origin(url: str) -> str:
    """The ``Signature-Agent`` value for the directory at *url*: its https origin
    (RFC 6454 ASCII serialization). *url* is the origin itself or the directory's
    own URL; ``ValueError`` names what else it holds."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() != "https":
        raise ValueError(f"must be an https URL, got {url!r}")
    if parts.username is not None or parts.query or parts.fragment:
        raise ValueError(f"must be an origin, without user, query or fragment: {url!r}")
    if parts.path not in ("", "/", DIRECTORY_PATH):
        raise ValueError(
            f"must be the origin serving {DIRECTORY_PATH} (https://host), got {url!r}"
        )
    if not url.isascii():
        raise ValueError(f"must be ASCII (an IDN host in its xn-- form), got {url!r}")
    try:
        return "https://" + authority_of(f"https://{parts.netloc}/")
    except ValueError:
        raise ValueError(f"has no usable host: {url!r}") from None


def sf_string(value: str) -> str:
    """*value* as a Structured Field String (RFC 9651 section 3.3.3)."""
    if not value.isascii() or not _printable(value):
        raise ValueError(f"not printable ASCII: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def signature_params(
    components: Sequence[str], parameters: Sequence[tuple[str, str | int]]
) -> str:
    """The ``@signature-params`` value: the covered component identifiers (already
    serialized, ``"@authority"``) as an Inner List, then each parameter."""
    text = "(" + " ".join(components) + ")"
    for name, value in parameters:
        text += f";{name}={value if isinstance(value, int) else sf_string(value)}"
    return text


def signature_base(lines: Sequence[tuple[str, str]], params: str) -> str:
    """The signature base (RFC 9421 section 2.5): one ``id: value`` line for each
    covered component, then the ``@signature-params`` line. A value with a line
    break is refused (``ValueError``): it would forge a line of its own."""
    for identifier, value in lines:
        if "\n" in value or "\r" in value:
            raise ValueError(f"a line break in the value of {identifier}")
    rows = [f"{identifier}: {value}" for identifier, value in lines]
    return "\n".join([*rows, f'"@signature-params": {params}'])


def signed_headers(  # noqa: PLR0913 (keyword-only: each is one fact signed)
    key: SigningKey,
    *,
    authority: str,
    agent: str | None,
    created: int,
    validity: int,
    nonce: bytes,
    label: str = LABEL,
) -> dict[str, str]:
    """The ``Signature-Input``, ``Signature`` (and, with an *agent* origin,
    ``Signature-Agent``) headers that sign a request to *authority*."""
    lines = [('"@authority"', authority)]
    headers = {}
    if agent is not None:
        member = f'"signature-agent";key={sf_string(label)}'
        lines.append((member, sf_string(agent)))
        headers["Signature-Agent"] = f"{label}={sf_string(agent)}"
    params = signature_params(
        [identifier for identifier, _ in lines],
        [
            ("created", created),
            ("keyid", key.keyid),
            ("alg", ALGORITHM),
            ("expires", created + validity),
            ("nonce", base64url(nonce)),
            ("tag", TAG),
        ],
    )
    base = signature_base(lines, params)
    signature = base64.b64encode(key.signer.sign(base.encode("ascii"))).decode()
    headers["Signature-Input"] = f"{label}={params}"
    headers["Signature"] = f"{label}=:{signature}:"
    return headers


def _printable(text: str) -> bool:
    return all(32 <= ord(character) < 127 for character in text)
