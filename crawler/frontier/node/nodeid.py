"""This node's id: ``FRONTIER_NODE_NAME``, or one stable per machine and directory.

A node restarted after ``kill -9`` must come back under the id it had, so that it
finds its shards still held in its name and takes them back at once (see
``Membership.resume``). Without a name, the id is ``<host>-<hash of the working
directory>-<n>``, where ``n`` is the first free slot among the lock files
``.crawl/node-<n>.lock``, each held with ``flock`` for the process' life: two live
processes in one directory get different ids, and a killed process frees its slot
(the kernel drops its locks), so its successor gets its id.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

# Where the slot lock files live, relative to the working directory.
LOCK_DIR = Path(".crawl")
# Slots tried before giving up on a stable id.
MAX_SLOTS = 256


@dataclass
class NodeIdentity:
    """A node id, and the lock that keeps it this process' own (None: a given name)."""

    node_id: str
    lock: IO[bytes] | None = None

    def release(self) -> None:
        """Free the slot (a clean close; death frees it too)."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None


def node_identity(name: str, directory: Path = LOCK_DIR) -> NodeIdentity:
    """The id of this node: *name* if given, else the first free slot's."""
    if name:
        return NodeIdentity(name)
    cwd = str(Path.cwd().resolve())
    base = f"{socket.gethostname()}-{hashlib.sha256(cwd.encode()).hexdigest()[:8]}"
    why = f"all {MAX_SLOTS} slots in {directory} are held"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for slot in range(MAX_SLOTS):
            lock = _locked(directory / f"node-{slot}.lock")
            if lock is not None:
                return NodeIdentity(f"{base}-{slot}", lock)
    except OSError as exc:
        why = str(exc)
    logger.warning(
        "No stable node id (%(why)s): a restarted node will wait FRONTIER_NODE_TTL "
        "for its shards; set FRONTIER_NODE_NAME",
        {"why": why},
    )
    return NodeIdentity(f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}")


def _locked(path: Path) -> IO[bytes] | None:
    """*path* opened and locked for this process, or None if another holds it."""
    handle = path.open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    except OSError:
        handle.close()
        raise
    return handle
