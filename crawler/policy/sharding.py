"""Which shard owns a host: MD5 of the shard key, modulo a power of two."""

from __future__ import annotations

import hashlib


def check_shards(shards: int) -> int:
    """Return *shards* if it is a usable shard count, else raise ``ValueError``."""
    if shards < 1 or shards & (shards - 1):
        raise ValueError(
            f"FRONTIER_SHARDS must be a power of two (1, 2, 4, ... 1024), got {shards!r}"
        )
    return shards


def shard_of(key: str, shards: int) -> int:
    """The shard of *key*: ``int(md5(key).hexdigest(), 16) & (shards - 1)``.

    The formula is part of the cluster's contract: every node, in any language, must
    compute the same shard for the same key.
    """
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest, "big") & (shards - 1)
