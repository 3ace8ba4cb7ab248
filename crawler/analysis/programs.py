"""External programs as analyzers: the ``ANALYZERS`` setting's program specs.

A spec is ``{"argv": ["prog", "{page}", "{result}", ...], "timeout": 60}``. Each
argument may hold the templates ``{page}`` (a private temporary file holding the
page), ``{result}`` (a temporary path the program may write its result to),
``{url}`` and ``{type}`` (the page's URL and Content-Type, from the task: hostile).
Templates are replaced in one pass per argument, so a value holding ``{page}`` or
shell metacharacters stays one literal argument; no shell ever runs. A program
succeeds by exiting 0 within its timeout; its result is the file at ``{result}`` if
it wrote one, else its standard output.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

# The names a program's arguments may hold as {name}.
TEMPLATES = frozenset({"page", "result", "url", "type"})
# Seconds a program may run when its spec gives no timeout.
DEFAULT_TIMEOUT = 60.0
# Largest result (file or standard output) taken from a program, in bytes.
MAX_OUTPUT = 16 * 1024 * 1024
# Characters of a failed program's standard error kept in its error.
MAX_STDERR = 500
_TEMPLATE = re.compile(r"\{(\w+)\}")


class ProgramFailedError(RuntimeError):
    """A program exited non-zero, ran past its timeout, or gave too much output."""


@dataclass(frozen=True, slots=True)
class ProgramSpec:
    """One external analyzer: its argument templates and its timeout in seconds."""

    argv: tuple[str, ...]
    timeout: float

    @classmethod
    def parse(cls, name: str, value: Any) -> ProgramSpec:
        """The spec of ANALYZERS[*name*]; ``ValueError`` in one line naming
        ANALYZERS when *value* is not ``{"argv": [...], "timeout": seconds}``."""
        where = f"ANALYZERS[{name!r}]"
        unknown = set(value) - {"argv", "timeout"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(map(str, unknown))}")
        argv = value.get("argv")
        if (
            not isinstance(argv, list | tuple)
            or not argv
            or not all(isinstance(argument, str) for argument in argv)
            or not argv[0]
        ):
            raise ValueError(f"{where}: argv must be a non-empty list of strings")
        for argument in argv:
            if bad := set(_TEMPLATE.findall(argument)) - TEMPLATES:
                raise ValueError(
                    f"{where}: unknown template {{{min(bad)}}} in {argument!r}"
                    f" (known: {', '.join(sorted(TEMPLATES))})"
                )
        timeout = value.get("timeout", DEFAULT_TIMEOUT)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < float("inf")
        ):
            raise ValueError(
                f"{where}: timeout must be positive seconds, got {timeout!r}"
            )
        return cls(tuple(argv), float(timeout))


def substituted(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    """*argv* with each ``{name}`` replaced by ``values[name]``, in one pass: a
    value is never searched for templates itself."""
    return [
        _TEMPLATE.sub(lambda found: values[found.group(1)], argument)
        for argument in argv
    ]


@dataclass(frozen=True, slots=True)
class RawOutput:
    """A program's result that is not a JSON object: stored byte for byte."""

    body: bytes


class ProgramAnalyzer:
    """Runs one program spec on a page (see the module's docstring)."""

    def __init__(self, spec: ProgramSpec) -> None:
        self._spec = spec

    def analyze(
        self, page: bytes, record: Mapping[str, Any]
    ) -> dict[str, Any] | RawOutput:
        """The program's result: a JSON object as a dict, anything else raw.
        ``ProgramFailedError`` or ``OSError`` (not found) fails the attempt."""
        with tempfile.TemporaryDirectory(prefix="analysis-") as work:  # mode 0700
            page_file, result_file = Path(work, "page"), Path(work, "result")
            page_file.write_bytes(page)
            argv = substituted(
                self._spec.argv,
                {
                    "page": str(page_file),
                    "result": str(result_file),
                    "url": str(record.get("url") or ""),
                    "type": str(record.get("content_type") or ""),
                },
            )
            output = self._run(argv, Path(work))
            if result_file.is_file():
                output = _bounded(result_file)
        return parsed(output)

    def _run(self, argv: list[str], work: Path) -> bytes:
        """Run *argv* in *work* (its own process group, killed whole on timeout);
        its standard output."""
        with (
            (work / ".stdout").open("w+b") as out,
            (work / ".stderr").open("w+b") as err,
        ):
            process = subprocess.Popen(  # noqa: S603 (argv from ANALYZERS, no shell)
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=work,
                start_new_session=True,
            )  # fmt: skip
            try:
                code = process.wait(timeout=self._spec.timeout)
            except subprocess.TimeoutExpired:
                raise ProgramFailedError(
                    f"{argv[0]} ran past its timeout of {self._spec.timeout:g} s"
                ) from None
            finally:
                _kill_group(process)  # past its timeout, or what it left running
            if code != 0:
                raise ProgramFailedError(f"{argv[0]} exited with {code}: {_tail(err)}")
        return _bounded(work / ".stdout")


def parsed(output: bytes) -> dict[str, Any] | RawOutput:
    """*output* as a dict if it is a JSON object, else raw."""
    try:
        value = json.loads(output)
    except ValueError:  # not UTF-8, or not JSON
        return RawOutput(output)
    return value if isinstance(value, dict) else RawOutput(output)


def _bounded(path: Path) -> bytes:
    """The file's bytes; ``ProgramFailedError`` beyond MAX_OUTPUT."""
    with path.open("rb") as file:
        body = file.read(MAX_OUTPUT + 1)
    if len(body) > MAX_OUTPUT:
        raise ProgramFailedError(f"output longer than {MAX_OUTPUT} bytes")
    return body


def _tail(stream: IO[bytes]) -> str:
    """The end of a program's standard error, as one line."""
    stream.seek(0, os.SEEK_END)
    stream.seek(max(0, stream.tell() - MAX_STDERR))
    text = stream.read().decode("utf-8", "replace")
    return " ".join(text.split())[-MAX_STDERR:] or "(no error output)"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group *process* leads, then reap *process*."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
