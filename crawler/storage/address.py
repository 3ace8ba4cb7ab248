"""Storage addresses: where a crawl writes pages, WARC files and analysis results.

An address is one setting's value (``PAGESTORE_URL``, ``WARC_URL``,
``ANALYSIS_RESULTS_URL``), in one of three forms:

- a plain path, ``.crawl/pages`` or ``/srv/pages``: a directory on this machine;
- ``file:///srv/pages``: the same, absolute (a ``file://`` URL names no other host);
- ``s3://bucket/prefix``: objects under *prefix* in an S3-compatible bucket (AWS S3,
  Ceph, MinIO, SeaweedFS...); the server is ``AWS_ENDPOINT_URL``, AWS's own when
  empty (docs/storage.md).

Keys below an address are relative POSIX paths (``crawler.policy.storepath`` makes
the page store's); ``check_key`` refuses any that could leave the address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from crawler.storage.errors import UnsafePathError

# S3's rules for bucket names (3 to 63 lowercase letters, digits, dots and hyphens,
# starting and ending with a letter or digit).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# Longest key S3 accepts, in bytes (prefix included).
MAX_KEY_BYTES = 1024


@dataclass(frozen=True, slots=True)
class StoreAddress:
    """A parsed address: a local directory (``root``) or a bucket and a prefix."""

    scheme: str  # "file" or "s3"
    root: Path | None = None  # file: the directory
    bucket: str = ""  # s3
    prefix: str = ""  # s3: "" or "a/b" (no slash at either end)

    @classmethod
    def parse(cls, text: str, setting: str) -> StoreAddress:
        """The address *text* names; ``ValueError`` with one line naming
        *setting* when it is not one of the three forms."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{setting} must be a path, file:///path or s3://bucket")
        if "://" not in text:
            return cls("file", root=Path(text))
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme == "file":
            if parts.netloc not in ("", "localhost") or not parts.path:
                raise ValueError(
                    f"{setting} {text!r}: a file:// address is file:///absolute/path"
                )
            return cls("file", root=Path(unquote(parts.path)))
        if scheme == "s3":
            if not _BUCKET.fullmatch(parts.netloc) or ".." in parts.netloc:
                raise ValueError(
                    f"{setting} {text!r}: {parts.netloc!r} is not an S3 bucket name"
                )
            if parts.query or parts.fragment:
                raise ValueError(f"{setting} {text!r}: an address takes no ?query or #")
            prefix = parts.path.strip("/")
            try:
                if prefix:
                    check_key(prefix)
            except UnsafePathError as exc:
                raise ValueError(f"{setting} {text!r}: {exc}") from None
            return cls("s3", bucket=parts.netloc, prefix=prefix)
        raise ValueError(
            f"{setting} {text!r}: unknown scheme {scheme!r} (a path, file:// or s3://)"
        )

    def url_of(self, key: str) -> str:
        """The full address of *key* (``file:///...`` or ``s3://bucket/...``)."""
        if self.scheme == "file":
            assert self.root is not None
            return (self.root.resolve() / key).as_uri()
        return f"s3://{self.bucket}/{self.object_key(key)}"

    def object_key(self, key: str) -> str:
        """*key* under the prefix (s3)."""
        return f"{self.prefix}/{key}" if self.prefix else key

    def key_of(self, url: str) -> str:
        """The key of a full address under this one; ``UnsafePathError`` when *url*
        is not below it (a hostile task naming another bucket or directory)."""
        base = self.url_of("").rstrip("/") + "/"
        if not url.startswith(base):
            raise UnsafePathError(f"{url[:200]!r} is not under {base}")
        key = url[len(base) :]
        if self.scheme == "file":
            key = unquote(key)
        check_key(key)
        return key

    def __str__(self) -> str:
        if self.scheme == "file":
            return str(self.root)
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


def check_key(key: str) -> str:
    """*key*, if it is a safe relative POSIX path: not empty, not absolute, no
    ``.``, ``..`` or empty segment, no NUL or backslash, at most MAX_KEY_BYTES;
    otherwise ``UnsafePathError``."""
    parts = key.split("/")
    if (
        not key
        or key.startswith("/")
        or "\\" in key
        or "\0" in key
        or any(part in ("", ".", "..") for part in parts)
        or len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES
    ):
        raise UnsafePathError(f"not a safe relative path: {key[:200]!r}")
    return key
