"""The store an address names, behind one interface (``ObjectStore``).

Every method blocks: a caller on the reactor's thread runs ``put`` and ``get`` in a
worker thread unless the body is at most the store's ``inline_write_bytes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from crawler.storage.address import StoreAddress
from crawler.storage.local import LocalStore

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

# The settings ``open_store`` reads besides the address (Scrapy's AWS_* and ours):
# what a process must be handed to open the same stores.
STORE_SETTINGS = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_REGION_NAME", "AWS_ENDPOINT_URL", "AWS_USE_SSL", "AWS_VERIFY",
    "STORAGE_RETRY_ATTEMPTS", "STORAGE_TIMEOUT", "STORAGE_MAX_UPLOADS",
)  # fmt: skip


class ObjectStore(Protocol):
    """A place objects are written to and read from by key (``check_key``)."""

    address: StoreAddress
    inline_write_bytes: int
    concurrent_writes: int

    def check(self, *, missing_ok: bool = False) -> None:
        """``ValueError`` with one line if the store cannot be written, or does
        not exist yet unless *missing_ok* (``open`` then makes it)."""

    def open(self) -> None:
        """Make what the store needs before the first write."""

    def put(self, key: str, body: bytes) -> None:
        """Write *body* at *key* atomically: whole or not at all. Raises
        ``UnsafePathError`` for a key that would leave the store, ``OSError``
        (``StoreUnavailableError`` when worth retrying) when it cannot write."""

    def put_file(self, key: str, path: Path) -> None:
        """Copy the file at *path* to *key*, streamed (a file may be larger than
        memory), atomically as ``put``."""

    def get(self, key: str) -> bytes:
        """The bytes at *key*; ``FileNotFoundError`` when there are none."""

    def close(self) -> None:
        """Release connections."""


def open_store(text: str, setting: str, settings: BaseSettings) -> ObjectStore:
    """The store the address *text* (the value of *setting*) names; ``ValueError``
    with one line naming the setting when the address or a setting it needs is
    bad. Nothing is made or contacted: ``check`` and ``open`` do that."""
    return store_at(StoreAddress.parse(text, setting), setting, settings)


def store_at(
    address: StoreAddress, setting: str, settings: BaseSettings
) -> ObjectStore:
    """The store at an address already parsed (see ``open_store``)."""
    if address.scheme == "s3":
        # boto3 takes a while to import: only crawls that store to S3 pay for it.
        from crawler.storage.s3 import S3Store  # noqa: PLC0415

        return S3Store.from_settings(address, settings)
    return LocalStore(address, setting)


# Each crawl's page store, opened once: the page store's pipeline and the reparse
# middleware share it (one S3 client and its connection pool, not one each).
_PAGE_STORES: WeakKeyDictionary[Crawler, ObjectStore] = WeakKeyDictionary()


def page_store_of(crawler: Crawler) -> ObjectStore:
    """The crawl's page store (``PAGESTORE_URL``), the same object for each of its
    components; ``ValueError`` as ``open_store``. The pipeline closes it."""
    store = _PAGE_STORES.get(crawler)
    if store is None:
        settings = crawler.settings
        store = open_store(settings["PAGESTORE_URL"], "PAGESTORE_URL", settings)
        _PAGE_STORES[crawler] = store
    return store
