"""Where the page store keeps a URL's page: a safe relative path that mirrors the URL.

Pure: no I/O. The scheme (docs/pagestore.md has examples)::

    <scheme>/<host>[_<port>]/<dir>@/<dir>@/<file>[+<query>]

* **scheme**: ``http`` or ``https`` (any other URL, or one without a host, raises
  ``ValueError``), so ``http://h/`` and ``https://h/`` never share a file.
* **host**: lowercased (ASCII letters only), ``_`` escaped; ``_<port>`` follows when
  the port is not the scheme's default (``:080`` is 80, ``:80`` on http is dropped).
* **path**: split on ``/`` *before* percent-decoding, so ``%2F`` stays inside a
  name and ``%2e%2e`` is a name, never a step; each segment is then decoded to bytes
  and escaped. Every segment but the last is a directory and ends with ``@``; the
  last one is the file, ``index.html`` when it is empty (``/``, ``/a/``). A segment
  that is itself ``index.html`` is written ``index%2Ehtml``.
* **query**: kept raw (not decoded: ``&`` and ``%26`` differ) and escaped after a
  ``+`` in the file name. An empty query (``/a?``) is no query.
* The fragment and any ``user:password@`` are not part of the page: dropped.

**Escaping**: every byte outside ``[a-z0-9._-]`` becomes ``%XX`` (uppercase hex),
so a name is ASCII and uppercase letters only occur in escapes: two names that
differ only in case (``/A`` and ``/a`` give ``%41`` and ``a``) never meet, even on a
case-insensitive or Unicode-normalizing file system. Also escaped: a leading ``.``
or ``-`` (no hidden files, no ``.``/``..``, no option-like names; it also keeps
stored names apart from the store's own ``.tmp-`` files), a trailing ``.`` (Windows
drops it), and the first letter of a Windows device name (``con``, ``nul.html``,
``com1``...). ``@``, ``+`` and ``,`` are always escaped in names, so as markers
they are unambiguous, and decoding is plain percent-decoding of each piece.

**Limits**: a name over 255 bytes keeps its first bytes and ends ``,<hash>`` (32 hex
digits of the SHA-256 of the full name) before its ``@``; a relative path over
2048 bytes becomes ``<scheme>/<host>/,<sha256>``. Only these hashed forms are not
reversible: ``url_of`` returns ``None`` for them.

Two URLs get the same path only if they are equal after the normalization above
(lowercase scheme and host, default port dropped, each path segment
percent-decoded, empty query dropped): ``url_of`` is a left inverse.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from urllib.parse import quote, unquote_to_bytes, urlsplit

SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789._-")
DEFAULT_PORTS = {"http": 80, "https": 443}
INDEX = "index.html"
DIR_MARK = "@"
QUERY_MARK = "+"
HASH_MARK = ","
# Longest file name on common file systems (ext4, NTFS, APFS), in bytes.
MAX_NAME_BYTES = 255
# Longest relative path; leaves room for the root under Linux's PATH_MAX (4096).
MAX_PATH_BYTES = 2048
HASH_DIGITS = 32
_WINDOWS_DEVICES = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?")
# Characters left as they are when url_of writes a path segment back.
_PATH_SAFE = "-._~!$&'()*;=:@,+"


def store_path(url: str) -> PurePosixPath:
    """The relative path of *url*'s page; ``ValueError`` if it is not http(s).

    The path has no empty, ``.`` or ``..`` part, no NUL, no part over 255 bytes and
    at most 2048 bytes in all, whatever *url* holds.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {url[:200]!r}")
    host = _host_dir(parts.netloc, DEFAULT_PORTS[scheme])
    segments = parts.path.split("/")[1:] or [""]
    names = [_shorten(_escape(_decode(s)), DIR_MARK) for s in segments[:-1]]
    names.append(_file_name(_decode(segments[-1]), parts.query))
    path = PurePosixPath(scheme, host, *names)
    if len(str(path).encode()) > MAX_PATH_BYTES:
        digest = hashlib.sha256(str(path).encode()).hexdigest()
        return PurePosixPath(scheme, host, HASH_MARK + digest)
    return path


def url_of(path: PurePosixPath | str) -> str | None:
    """The normalized URL whose page is at *path*; None for a hashed (shortened) path.

    ``ValueError`` if *path* is not one that ``store_path`` makes.
    """
    scheme, host_dir, *names = PurePosixPath(path).parts
    if scheme not in DEFAULT_PORTS or not names:
        raise ValueError(f"not a page store path: {path!s}")
    if any(HASH_MARK in name for name in (host_dir, *names)):
        return None
    host, _, port = host_dir.partition("_")  # "_" is escaped in host names
    authority = _unescape(host).decode("utf-8", "surrogatepass")
    if port:
        authority += f":{port}"
    segments = [_unescape(name.removesuffix(DIR_MARK)) for name in names[:-1]]
    file, _, query = names[-1].partition(QUERY_MARK)
    segments.append(b"" if file == INDEX else _unescape(file))
    text = "/".join(quote(segment, safe=_PATH_SAFE) for segment in segments)
    url = f"{scheme}://{authority}/{text}"
    if query:
        url += "?" + _unescape(query).decode("utf-8", "surrogatepass")
    return url


def _host_dir(netloc: str, default_port: int) -> str:
    """``host`` or ``host_port``, escaped; ``ValueError`` for no host or a bad port."""
    hostport = netloc.rpartition("@")[2]
    host, port = hostport, ""
    if hostport.startswith("["):
        end = hostport.find("]") + 1
        host, port = hostport[:end], hostport[end:].removeprefix(":")
    elif ":" in hostport:
        host, _, port = hostport.partition(":")
    host = _ascii_lower(host)
    if not host:
        raise ValueError(f"URL without a host: {netloc[:200]!r}")
    if port and not (port.isascii() and port.isdigit()):
        raise ValueError(f"URL with a bad port: {port[:50]!r}")
    name = _escape(_encode(host)).replace("_", "%5F")
    if port and int(port) != default_port:
        name += f"_{int(port)}"
    return _shorten(name, "")


def _file_name(segment: bytes, query: str) -> str:
    """The escaped last segment (``index.html`` if empty), then ``+`` and the query."""
    name = INDEX if not segment else _escape(segment)
    if name == INDEX and segment:
        name = "index%2Ehtml"
    if query:
        name += QUERY_MARK + _escape(_encode(query))
    return _shorten(_fix_ends(name), "")


def _escape(raw: bytes) -> str:
    """``%XX`` for every byte outside ``[a-z0-9._-]``; the ends and device names fixed."""
    return _fix_ends("".join(chr(b) if b in SAFE else f"%{b:02X}" for b in raw))


def _fix_ends(name: str) -> str:
    """Escape a leading ``.``/``-``, a trailing ``.`` and a Windows device name."""
    if name[:1] in (".", "-"):
        name = f"%{ord(name[0]):02X}{name[1:]}"
    if name.endswith("."):
        name = name[:-1] + "%2E"
    if _WINDOWS_DEVICES.fullmatch(name):
        name = f"%{ord(name[0]):02X}{name[1:]}"
    return name


def _shorten(name: str, mark: str) -> str:
    """*name* + *mark*, or its first bytes + ``,`` + hash + *mark* if over 255 bytes."""
    if len(name) + len(mark) <= MAX_NAME_BYTES:
        return name + mark
    digest = hashlib.sha256(name.encode()).hexdigest()[:HASH_DIGITS]
    keep = MAX_NAME_BYTES - len(mark) - len(HASH_MARK) - HASH_DIGITS
    cut = name.rfind("%", keep - 2, keep)  # never split a %XX escape
    prefix = name[: cut if cut >= 0 else keep]
    return prefix + HASH_MARK + digest + mark


def _decode(segment: str) -> bytes:
    """A path segment's bytes: percent-decoded, raw characters as UTF-8."""
    return unquote_to_bytes(_encode(segment))


def _encode(text: str) -> bytes:
    """UTF-8, with lone surrogates (never valid, but possible in a str) kept."""
    return text.encode("utf-8", "surrogatepass")


def _unescape(name: str) -> bytes:
    """Bytes of an escaped name (the inverse of ``_escape``)."""
    return unquote_to_bytes(name)


def _ascii_lower(text: str) -> str:
    """Lowercase A-Z only: Unicode lowercasing merges characters (K and the
    Kelvin sign), which would make two hosts one."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
