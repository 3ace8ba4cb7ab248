"""Which S3 client the page store uses, chosen on data: boto3 (threads) against
aiobotocore (asyncio; what s3fs runs on), writing page-sized objects to a SeaweedFS
server on loopback.

    .venv/bin/python -m bench.s3clients [--objects 1000] [--size 20000] [--rounds 3]

aiobotocore is not among the project's requirements (it pins botocore to its own
release, which then conflicts with boto3's): run this in an environment that has
both, ``pip install boto3 aiobotocore``, beside requirements-dev.txt for the server.
Each round writes ``--objects`` objects one at a time and 16 at a time with each
client, in turn; prints objects/s and the process CPU ms an object.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.objectstore import ACCESS_KEY, SECRET_KEY, ObjectStoreServer

BUCKET = "clients"
CONCURRENCY = 16


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--size", type=int, default=20_000, help="bytes an object")
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args(argv)


def timed(label: str, count: int, run: Any) -> dict[str, Any]:
    wall, cpu = time.monotonic(), time.process_time()
    run()
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    return {
        "client": label,
        "objects_per_s": count / wall,
        "cpu_ms": cpu * 1000 / count,
    }


def boto3_puts(endpoint: str, keys: list[str], body: bytes, workers: int) -> None:
    import boto3  # noqa: PLC0415 (the client under test)

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
    )  # fmt: skip
    with ThreadPoolExecutor(workers) as pool:
        list(
            pool.map(lambda k: client.put_object(Bucket=BUCKET, Key=k, Body=body), keys)
        )


def aiobotocore_puts(endpoint: str, keys: list[str], body: bytes, workers: int) -> None:
    from aiobotocore.session import get_session  # noqa: PLC0415

    async def main() -> None:
        gate = asyncio.Semaphore(workers)
        async with get_session().create_client(
            "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
        ) as client:  # fmt: skip

            async def put(key: str) -> None:
                async with gate:
                    await client.put_object(Bucket=BUCKET, Key=key, Body=body)

            await asyncio.gather(*(put(key) for key in keys))

    asyncio.run(main())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    body = b"x" * args.size
    rows = []
    with tempfile.TemporaryDirectory(prefix="s3clients-") as tmp:
        server = ObjectStoreServer(Path(tmp))
        server.start()
        try:
            server.make_bucket(BUCKET)
            for index in range(args.rounds):
                for workers in (1, CONCURRENCY):
                    for name, puts in (
                        ("boto3", boto3_puts),
                        ("aiobotocore", aiobotocore_puts),
                    ):
                        keys = [
                            f"{name}/{index}/{workers}/{n}" for n in range(args.objects)
                        ]
                        row = timed(
                            name,
                            len(keys),
                            lambda p=puts, k=keys, w=workers: p(
                                server.endpoint, k, body, w
                            ),
                        )
                        rows.append(row | {"at_once": workers, "round": index + 1})
                        print(f"  round {index + 1}, {workers} at once, {name}: "
                              f"{row['objects_per_s']:.0f} objects/s, "
                              f"{row['cpu_ms']:.2f} CPU ms an object", flush=True)  # fmt: skip
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
