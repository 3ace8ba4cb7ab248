"""The one object that runs the frontier's Lua scripts, on one server or a Cluster.

The sources are in ``crawler.frontier.store.queuescripts``,
``crawler.frontier.store.repairscripts`` and ``crawler.frontier.store.spillscripts``;
each is loaded after its record fields (``crawler.frontier.store.scriptargs``) and
the helpers of ``crawler.frontier.store.scripthelpers``, which name its keys
(``crawler.frontier.store.scriptkeys``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from redis.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from crawler.frontier.store.queuescripts import (
    ACK,
    CREDIT,
    FORGET_IDLE,
    POP,
    PROMOTE,
    PUSH,
    REQUEUE,
    RETRY,
)
from crawler.frontier.store.repairscripts import REPAIR, REPAIR_COUNTS, REPAIR_HOSTS
from crawler.frontier.store.scriptargs import SIGNATURES
from crawler.frontier.store.scripthelpers import GUARD, HELPERS
from crawler.frontier.store.scriptkeys import shard_keys
from crawler.frontier.store.spillscripts import (
    SPILL_DUE,
    SPILL_FORGET,
    SPILL_LOST,
    SPILL_REFILL,
    SPILL_TRIM,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from redis import Redis
    from redis.client import Pipeline
    from redis.commands.core import Script
    from redis.typing import EncodableT, KeyT

    from crawler.context.roundtriptimes import RoundTripTimes
    from crawler.crawlstate.keys import Keys
    from crawler.frontier.store.scriptargs import Scalar, Value


@dataclass(frozen=True, slots=True)
class Call:
    """One script call: which script, on which shard, with what arguments (by
    name, as the script's ``Signature`` lists them) and records."""

    script: str
    keys: Keys
    args: Mapping[str, Scalar]
    records: Sequence[Mapping[str, Value]] = ()

    def argv(self) -> list[Value]:
        """The call's ARGV: its named arguments and the shard's tag, then records."""
        return SIGNATURES[self.script].encode(self.keys.tag, self.args, self.records)


class ScriptRunner:
    """Runs script calls in one round trip; reloads scripts after a SCRIPT FLUSH.

    Scripts are called by SHA. redis-py's ``Script`` objects would send a
    ``SCRIPT EXISTS`` before every pipeline; instead a ``NOSCRIPT`` answer reloads the
    scripts and re-runs only the calls that failed, in order.
    """

    SOURCES: ClassVar[dict[str, str]] = {
        "push": PUSH,
        "credit": CREDIT,
        "pop": POP,
        "ack": ACK,
        "requeue": REQUEUE,
        "promote": PROMOTE,
        "forget_idle": FORGET_IDLE,
        "retry": RETRY,
        "repair": REPAIR,
        "repair_hosts": REPAIR_HOSTS,
        "repair_counts": REPAIR_COUNTS,
        "spill_due": SPILL_DUE,
        "spill_trim": SPILL_TRIM,
        "spill_refill": SPILL_REFILL,
        "spill_forget": SPILL_FORGET,
        "spill_lost": SPILL_LOST,
    }

    def __init__(self, client: Redis, times: RoundTripTimes | None = None) -> None:
        self._client = client
        self._sha: dict[str, str] = {}
        self._times = times

    def load(self) -> None:
        for name in self.SOURCES:
            self._sha[name] = self._client.script_load(script_source(name))

    def run(
        self,
        calls: Sequence[Call],
        repair: Callable[[Call], None] | None = None,
        first: int = 0,
    ) -> list[Any]:
        """The replies of *calls*, run in order in one pipeline; the *first* calls
        take effect before any other starts (one server's pipeline runs in order).

        A call that fails with any other error (a script error on a damaged value, a
        key of the wrong type) does not fail the others: *repair* is called once for
        its shard (with the call) and the call runs once more. Raises the first error left then.
        """
        if not self._sha:
            self.load()
        results = self._execute(calls)
        failed = self._failed(results, NoScriptError)
        if failed:
            self.load()
            self._rerun(calls, results, failed)
        failed = self._failed(results, ResponseError)
        if failed and repair is not None:
            for index in {calls[i].keys: i for i in failed}.values():
                repair(calls[index])
            self._rerun(calls, results, failed)
        for result in results:
            if isinstance(result, ResponseError):
                raise result
        return results

    @staticmethod
    def _failed(results: list[Any], kind: type[Exception]) -> list[int]:
        return [i for i, result in enumerate(results) if isinstance(result, kind)]

    def _rerun(
        self, calls: Sequence[Call], results: list[Any], failed: list[int]
    ) -> None:
        """Run the calls at indexes *failed* again, in order; their replies replace."""
        for index, result in zip(
            failed, self._execute([calls[i] for i in failed]), strict=True
        ):
            results[index] = result

    def _execute(self, calls: Sequence[Call]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for call in calls:
            keys = shard_keys(call.keys)
            pipe.evalsha(self._sha[call.script], len(keys), *keys, *call.argv())
        return self._send(pipe)

    def _send(self, pipe: Pipeline) -> list[Any]:
        """Execute *pipe*: one round trip, timed when ``times`` was given."""
        started = time.monotonic()
        replies = list(pipe.execute(raise_on_error=False))
        if self._times is not None:
            self._times.add(time.monotonic() - started)
        return replies


class ClusterScriptRunner(ScriptRunner):
    """A ``ScriptRunner`` for a Redis Cluster: each call goes to the node that serves
    its shard's slot. ``SCRIPT LOAD`` reaches every primary.

    A Cluster pipeline writes to every node before it reads any reply, and each node
    runs its part when it gets to it: calls to two nodes take effect in either
    order. Where the order matters (a page's links queued before its lease is
    released, or another node may find the crawl empty and stop), the *first*
    calls go in a pipeline of their own, unless every call is for one node.
    """

    def __init__(
        self, client: RedisCluster, times: RoundTripTimes | None = None
    ) -> None:
        super().__init__(cast("Redis", client), times)
        self._cluster = client

    def run(
        self,
        calls: Sequence[Call],
        repair: Callable[[Call], None] | None = None,
        first: int = 0,
    ) -> list[Any]:
        if 0 < first < len(calls) and len({self._node(c) for c in calls}) > 1:
            return super().run(calls[:first], repair) + super().run(
                calls[first:], repair
            )
        return super().run(calls, repair)

    def _node(self, call: Call) -> str:
        """The name of the node that serves *call*'s shard."""
        node = self._cluster.get_node_from_key(call.keys.ready)  # type: ignore[no-untyped-call]
        return str(node.name)

    def _execute(self, calls: Sequence[Call]) -> list[Any]:
        pipe = self._cluster.pipeline(transaction=False)  # type: ignore[no-untyped-call]
        for call in calls:
            keys = shard_keys(call.keys)
            sha = self._sha[call.script]
            queue_on_slot(pipe, "EVALSHA", sha, keys, call.argv())
        return self._send(pipe)


def script_source(name: str) -> str:
    """The full source of script *name*: its record fields, the helpers (keys and
    arguments named), the guard (not before the repair scripts), the script."""
    guard = "" if name.startswith("repair") else GUARD
    source = ScriptRunner.SOURCES[name]
    return SIGNATURES[name].lua() + HELPERS + guard + source


def script_runner(client: Redis, times: RoundTripTimes | None = None) -> ScriptRunner:
    """The runner of the frontier's scripts on *client*, a single server or a
    Cluster; each round trip's time goes to *times*, if given."""
    if isinstance(client, RedisCluster):
        return ClusterScriptRunner(client, times)
    return ScriptRunner(client, times)


def queue_script(
    pipe: Pipeline,
    script: Script,
    keys: Sequence[KeyT],
    args: Sequence[EncodableT],
) -> None:
    """Queue a call of *script* (``register_script``) in *pipe*, a single server's
    pipeline or a Cluster's. On a Cluster the source goes with ``EVAL``, so no node
    needs it loaded (for the few calls of a heartbeat, not for the frontier's)."""
    if isinstance(pipe, ClusterPipeline):
        queue_on_slot(pipe, "EVAL", script.script, keys, args)
    else:
        script(keys=keys, args=args, client=pipe)


def queue_on_slot(
    pipe: ClusterPipeline,
    command: str,
    script: str | bytes,
    keys: Sequence[KeyT],
    args: Sequence[EncodableT],
) -> None:
    """Queue ``EVAL`` or ``EVALSHA`` of *script* in a Cluster pipeline, sent to the
    primary of its keys' slot (all of *keys* share it).

    redis-py refuses ``pipe.evalsha`` in a Cluster pipeline, and sent by name an
    EVALSHA costs a ``COMMAND GETKEYS`` round trip to find its keys; here the first
    key names the node, as redis-py's own multi-slot commands do. A node that lost
    the slot answers MOVED, and redis-py sends the call again where it belongs.
    """
    # redis-py's cluster classes are not typed.
    node = pipe.get_node_from_key(keys[0])  # type: ignore[no-untyped-call]
    pipe.execute_command(  # type: ignore[no-untyped-call]
        command, script, len(keys), *keys, *args, target_nodes=node
    )
