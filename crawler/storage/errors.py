"""What a store raises: a key it will not write, a store that cannot answer now, an
object it will never take. All but ``UnsafePathError`` are ``OSError``s, as a
local disk's failures are."""

from __future__ import annotations


class UnsafePathError(ValueError):
    """A key that would leave its store's root (or pass through a symlink)."""


class StoreUnavailableError(OSError):
    """The store cannot take or give objects now (unreachable, failing, refusing
    these credentials): worth trying again later."""


class StoreRefusedError(OSError):
    """The store will never take this object (a key or body it rejects)."""
