"""A store in an S3-compatible bucket, through boto3 (the AWS SDK, well kept, and
what Scrapy's own S3 feed storage uses underneath).

- **Atomic**: a PUT makes the object whole or leaves the old one; there are no
  partial objects to clean up. A body is sent with its MD5, so a body damaged on
  the way is refused by the server, not stored.
- **Retried**: botocore's ``standard`` retry mode retries throttling, 5xx answers
  and broken connections with jittered exponential back-off, up to
  ``STORAGE_RETRY_ATTEMPTS`` tries a call. What still fails is raised as
  ``StoreUnavailableError`` (the server cannot take it now: callers wait and try
  again) or ``StoreRefusedError`` (this object will never be taken: callers skip
  it).
- **Credentials**: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN`` (Scrapy's settings) when set, else boto3's standard chain
  (environment, ``~/.aws/credentials`` and ``config``, instance roles). Messages
  raised here name the bucket, key and error code, never a credential.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import TYPE_CHECKING, Any

import boto3
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from crawler.policy.typedsettings import get_float, get_int
from crawler.storage.address import StoreAddress, check_key
from crawler.storage.errors import StoreRefusedError, StoreUnavailableError

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.settings import BaseSettings

# Files larger than this are uploaded in parts of this size (S3's least part is 5 MiB).
MULTIPART_BYTES = 64 * 1024 * 1024

# Error codes that mean "not now" (the crawl waits), not "never": the server is
# busy or failing, or the bucket or credentials are wrong, which an operator fixes
# while the pages wait.
_NOT_NOW = frozenset(
    {
        "AccessDenied",
        "ExpiredToken",
        "InvalidAccessKeyId",
        "NoSuchBucket",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "ServiceUnavailable",
        "SignatureDoesNotMatch",
        "SlowDown",
        "Throttling",
        "TokenRefreshRequired",
    }
)


class S3Store:
    """Objects under ``s3://bucket/prefix`` (see the module's docstring)."""

    # Every call goes to a worker thread: none is fast enough for the reactor's.
    inline_write_bytes = -1

    def __init__(
        self, address: StoreAddress, client: Any, concurrent_writes: int
    ) -> None:
        self.address = address
        self.concurrent_writes = concurrent_writes
        self._client = client
        self._missing = False  # check found no bucket, which open makes

    @classmethod
    def from_settings(cls, address: StoreAddress, settings: BaseSettings) -> S3Store:
        """A store with its client made from Scrapy's ``AWS_*`` settings and ours
        (``STORAGE_*``); ``ValueError`` with one line for a bad setting."""
        attempts = get_int(settings, "STORAGE_RETRY_ATTEMPTS", at_least=1)
        timeout = get_float(settings, "STORAGE_TIMEOUT", above=0, note="seconds")
        connections = get_int(settings, "STORAGE_MAX_UPLOADS", at_least=1)
        config = Config(
            retries={"mode": "standard", "max_attempts": attempts},
            connect_timeout=timeout,
            read_timeout=timeout,
            max_pool_connections=connections,
            # Checksums only where the API requires them: some S3-compatible
            # servers refuse the newer trailing checksums; Content-MD5 is sent.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        session = boto3.session.Session(
            aws_access_key_id=settings.get("AWS_ACCESS_KEY_ID") or None,
            aws_secret_access_key=settings.get("AWS_SECRET_ACCESS_KEY") or None,
            aws_session_token=settings.get("AWS_SESSION_TOKEN") or None,
            region_name=settings.get("AWS_REGION_NAME") or None,
        )
        options = {  # Scrapy's AWS_* settings: None leaves boto3's default
            name: value
            for name, value in (
                ("endpoint_url", settings.get("AWS_ENDPOINT_URL")),
                ("use_ssl", settings.get("AWS_USE_SSL")),
                ("verify", settings.get("AWS_VERIFY")),
            )
            if value not in (None, "")
        }
        client = session.client("s3", config=config, **options)
        return cls(address, client, connections)

    def check(self, *, missing_ok: bool = False) -> None:
        """``ValueError`` with one line when the server refuses the bucket (these
        credentials may not use it, or there is none of that name and *missing_ok*
        is false: ``open`` then makes it). A server that does not answer is not an
        error here: the crawl starts and its pages wait."""
        try:
            self._client.head_bucket(Bucket=self.address.bucket)
        except ClientError as exc:
            status = _status(exc)
            if status == 404 and missing_ok:
                self._missing = True
            elif 400 <= status < 500:
                raise ValueError(f"{self.address}: {_said(exc)}") from None
        except BotoCoreError:
            pass  # unreachable now: writes wait for it

    def open(self) -> None:
        """Make the bucket ``check`` found missing (as a directory store makes its
        directory), in the client's region; ``StoreUnavailableError`` or
        ``StoreRefusedError`` when that fails."""
        if not self._missing:
            return
        region = self._client.meta.region_name
        where = {} if region in (None, "us-east-1") else {
            "CreateBucketConfiguration": {"LocationConstraint": region}
        }  # fmt: skip
        self._call("create_bucket", Bucket=self.address.bucket, **where)
        self._missing = False
        logger.warning(
            "Made bucket %(bucket)s: there was none", {"bucket": self.address.bucket}
        )

    def put(self, key: str, body: bytes) -> None:
        """Store *body* at *key* (whole or not at all)."""
        object_key = self.address.object_key(check_key(key))
        digest = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest())
        self._call(
            "put_object",
            Bucket=self.address.bucket,
            Key=object_key,
            Body=body,
            ContentMD5=digest.decode(),
        )

    def put_file(self, key: str, path: Path) -> None:
        """Upload the file at *path* to *key*, in parts above MULTIPART_BYTES (the
        object appears only once every part is in)."""
        object_key = self.address.object_key(check_key(key))
        transfer = TransferConfig(
            multipart_threshold=MULTIPART_BYTES, multipart_chunksize=MULTIPART_BYTES
        )
        try:
            self._client.upload_file(
                str(path), self.address.bucket, object_key, Config=transfer
            )
        except S3UploadFailedError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, (BotoCoreError, ClientError)):
                raise _translated(cause, object_key) from None
            raise StoreUnavailableError(f"{object_key[:200]}: {exc}") from None
        except (BotoCoreError, ClientError) as exc:
            raise _translated(exc, object_key) from None

    def get(self, key: str) -> bytes:
        """The object's bytes; ``FileNotFoundError`` when there is none."""
        object_key = self.address.object_key(check_key(key))
        try:
            answer = self._client.get_object(Bucket=self.address.bucket, Key=object_key)
            return bytes(answer["Body"].read())
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                raise FileNotFoundError(2, "no such object", object_key) from None
            raise _translated(exc, object_key) from None
        except BotoCoreError as exc:
            raise _translated(exc, object_key) from None

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def _call(self, operation: str, **arguments: Any) -> Any:
        try:
            return getattr(self._client, operation)(**arguments)
        except (BotoCoreError, ClientError) as exc:
            raise _translated(exc, arguments.get("Key", "")) from None


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    """The HTTP status of the server's answer (0 when there was none)."""
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _said(exc: BotoCoreError | ClientError) -> str:
    """What went wrong, in one line: the error's code and message (botocore's
    messages name endpoints, buckets and keys, never credentials)."""
    return " ".join(str(exc).split())[:300]


def _translated(exc: BotoCoreError | ClientError, key: str) -> OSError:
    """*exc* as ``StoreUnavailableError`` or ``StoreRefusedError``."""
    if (
        isinstance(exc, ClientError)
        and _code(exc) not in _NOT_NOW
        and 400 <= _status(exc) < 500
    ):
        return StoreRefusedError(f"{key[:200]}: {_said(exc)}")
    return StoreUnavailableError(f"{key[:200]}: {_said(exc)}")
