"""crawler/policy/botauth.py against the published vectors: RFC 9421's Ed25519
request (B.2.6), the Web Bot Auth draft's Ed25519 request, RFC 8037's thumbprint;
and what a signed request's headers are, checked by an independent verifier."""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from http_message_signatures import (
    HTTPMessageVerifier,
    InvalidSignature,
    MappingKeyResolver,
    algorithms,
)
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.botauth import (
    SigningKey,
    agent_origin,
    authority_of,
    directory,
    signature_base,
    signature_params,
    signed_headers,
    thumbprint,
)

# RFC 9421 appendix B.1.4, "test-key-ed25519" (also the Web Bot Auth drafts' key).
RFC_ED25519_PRIVATE = b"""-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
"""
RFC_ED25519_X = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"
# Its thumbprint, as draft-meunier-webbotauth-httpsig-protocol's vectors give it.
RFC_ED25519_KEYID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"

# RFC 9421 appendix B.2.6: signing a request using ed25519.
B26_LINES = [
    ('"date"', "Tue, 20 Apr 2021 02:07:55 GMT"),
    ('"@method"', "POST"),
    ('"@path"', "/foo"),
    ('"@authority"', "example.com"),
    ('"content-type"', "application/json"),
    ('"content-length"', "18"),
]
B26_BASE = (
    '"date": Tue, 20 Apr 2021 02:07:55 GMT\n'
    '"@method": POST\n'
    '"@path": /foo\n'
    '"@authority": example.com\n'
    '"content-type": application/json\n'
    '"content-length": 18\n'
    '"@signature-params": ("date" "@method" "@path" "@authority" '
    '"content-type" "content-length");created=1618884473;keyid="test-key-ed25519"'
)
B26_SIGNATURE = (
    "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQ"
    "v5lIp5WPpBKRCw=="
)

# draft-meunier-webbotauth-httpsig-protocol, "EdDSA Using Curve edwards25519",
# Signature-Agent present (a Dictionary member covered by its key).
DRAFT_NONCE = (
    "n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQ"
    "b6E1YsauiA=="
)
DRAFT_PARAMS = (
    '("@authority" "signature-agent";key="agent2");created=1735689600'
    ';keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519"'
    f';expires=4889289600;nonce="{DRAFT_NONCE}";tag="web-bot-auth"'
)
DRAFT_BASE = (
    '"@authority": example.com\n'
    '"signature-agent";key="agent2": "https://signature-agent.test"\n'
    f'"@signature-params": {DRAFT_PARAMS}'
)
DRAFT_SIGNATURE = (
    "RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSa"
    "nGdhEwYCCg=="
)


def rfc_key():
    return load_pem_private_key(RFC_ED25519_PRIVATE, password=None)


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_rfc_9421_b26_signature_base_and_ed25519_signature():
    params = signature_params(
        [identifier for identifier, _ in B26_LINES],
        [("created", 1618884473), ("keyid", "test-key-ed25519")],
    )
    base = signature_base(B26_LINES, params)
    assert base == B26_BASE
    # Ed25519 is deterministic: the RFC's own signature bytes.
    assert rfc_key().sign(base.encode()) == base64.b64decode(B26_SIGNATURE)


def test_the_web_bot_auth_drafts_ed25519_vector():
    lines = [
        ('"@authority"', "example.com"),
        ('"signature-agent";key="agent2"', '"https://signature-agent.test"'),
    ]
    params = signature_params(
        [identifier for identifier, _ in lines],
        [
            ("created", 1735689600),
            ("keyid", RFC_ED25519_KEYID),
            ("alg", "ed25519"),
            ("expires", 4889289600),
            ("nonce", DRAFT_NONCE),
            ("tag", "web-bot-auth"),
        ],
    )
    assert params == DRAFT_PARAMS
    assert signature_base(lines, params) == DRAFT_BASE
    signature = rfc_key().sign(DRAFT_BASE.encode())
    assert signature == base64.b64decode(DRAFT_SIGNATURE)


def test_keyid_is_the_jwk_thumbprint_of_rfc_8037_and_of_the_drafts():
    # RFC 8037 appendix A.3.
    rfc_8037_x = b64url_decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
    assert thumbprint(rfc_8037_x) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    assert thumbprint(b64url_decode(RFC_ED25519_X)) == RFC_ED25519_KEYID


def test_the_directory_lists_the_public_key_with_its_thumbprint_as_kid():
    public = b64url_decode(RFC_ED25519_X)
    assert directory([public]) == {
        "keys": [
            {
                "kty": "OKP",
                "crv": "Ed25519",
                "x": RFC_ED25519_X,
                "kid": RFC_ED25519_KEYID,
                "use": "sig",
            }
        ]
    }


def test_a_public_key_of_another_size_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        thumbprint(bytes(33))


# --- What a request's headers are -----------------------------------------------


@dataclass
class Message:
    """A request as http_message_signatures reads it."""

    method: str
    url: str
    headers: dict[str, str]


def verifier() -> HTTPMessageVerifier:
    public = rfc_key().public_key()
    resolver = MappingKeyResolver(
        public_keys={RFC_ED25519_KEYID: public}, private_keys={}
    )
    return HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=resolver
    )


def sign(authority: str, agent: str | None, created: int) -> dict[str, str]:
    key = SigningKey(rfc_key(), RFC_ED25519_KEYID)
    return signed_headers(
        key,
        authority=authority,
        agent=agent,
        created=created,
        validity=300,
        nonce=bytes(range(64)),
    )


def test_signed_headers_verify_and_cover_authority_and_signature_agent():
    now = int(datetime.datetime.now(datetime.UTC).timestamp())
    headers = sign("example.com:8080", "https://bot.example", now)
    assert headers["Signature-Agent"] == 'sig1="https://bot.example"'
    expected_input = (
        'sig1=("@authority" "signature-agent";key="sig1");'
        f'created={now};keyid="{RFC_ED25519_KEYID}";alg="ed25519";'
        f'expires={now + 300};nonce="{base64.urlsafe_b64encode(bytes(range(64))).decode().rstrip("=")}";'
        'tag="web-bot-auth"'
    )
    assert headers["Signature-Input"] == expected_input
    message = Message("GET", "http://example.com:8080/a?b", headers)
    [result] = verifier().verify(
        message,
        expect_tag="web-bot-auth",
        require_components=("@authority", '"signature-agent";key="sig1"'),
    )
    assert result.covered_components['"@authority"'] == "example.com:8080"
    # Another authority, another agent: the signature no longer holds.
    for url, changes in [
        ("http://example.org:8080/a", {}),
        ("http://example.com:8080/a", {"Signature-Agent": 'sig1="https://x.example"'}),
    ]:
        with pytest.raises(InvalidSignature):
            verifier().verify(Message("GET", url, headers | changes))


def test_without_an_agent_only_the_authority_is_covered():
    now = int(datetime.datetime.now(datetime.UTC).timestamp())
    headers = sign("example.com", None, now)
    assert "Signature-Agent" not in headers
    assert headers["Signature-Input"].startswith('sig1=("@authority");created=')
    message = Message("GET", "https://example.com/", headers)
    [result] = verifier().verify(message, expect_tag="web-bot-auth")
    covered = set(result.covered_components) - {'"@signature-params"'}
    assert covered == {'"@authority"'}


# --- @authority and the Signature-Agent origin ----------------------------------


@pytest.mark.parametrize(
    ("url", "authority"),
    [
        ("http://Example.COM/a", "example.com"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("https://example.com:80/", "example.com:80"),
        ("http://127.0.0.2:8080/p/1.html?x=1", "127.0.0.2:8080"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("http://user:secret@example.com/", "example.com"),
        ("http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ],
)
def test_authority_is_the_host_in_lower_case_and_a_port_not_the_default(url, authority):
    assert authority_of(url) == authority


@pytest.mark.parametrize(
    "url",
    ["data:,x", "file:///etc/hosts", "http:///path", "http://[::1/", "http://h:99999/"],
)
def test_a_url_without_a_usable_authority_is_refused(url):
    with pytest.raises(ValueError):  # noqa: PT011 (the message names the URL)
        authority_of(url)


@given(st.text(max_size=60))
def test_any_text_gives_a_clean_authority_or_a_value_error(text):
    for url in (text, "http://" + text):
        try:
            authority = authority_of(url)
        except ValueError:
            continue
        assert authority
        assert all(32 < ord(character) < 127 for character in authority)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://bot.example.com", "https://bot.example.com"),
        ("https://Bot.Example.com/", "https://bot.example.com"),
        ("https://bot.example.com:443/", "https://bot.example.com"),
        ("https://bot.example.com:8443", "https://bot.example.com:8443"),
        (
            "https://bot.example.com/.well-known/http-message-signatures-directory",
            "https://bot.example.com",
        ),
    ],
)
def test_the_agent_is_the_origin_serving_the_directory(url, origin):
    assert agent_origin(url) == origin


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://bot.example.com", "https"),
        ("bot.example.com", "https"),
        ("https://bot.example.com/keys.json", "origin serving"),
        ("https://bot.example.com/?a=1", "origin"),
        ("https://me:pw@bot.example.com/", "origin"),
        ("https://bücher.example/", "xn--"),
        ("https:///", "no usable host"),
    ],
)
def test_an_agent_url_that_is_not_an_https_origin_is_refused(url, words):
    with pytest.raises(ValueError, match=words):
        agent_origin(url)


def test_a_component_value_with_a_line_break_is_refused():
    with pytest.raises(ValueError, match="line break"):
        signature_base([('"@authority"', "example.com\nx: y")], "()")
