"""Starting the writer (`statectl.project.writer`) in the project's interpreter and talking to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from statectl.errors import StatectlError

HERE = str(Path(__file__).resolve().parent.parent.parent)
"""The folder holding the statectl package, put at the end of the writer's path."""


def writer_python(python: str | None) -> str:
    """The interpreter that writes: `--python`, else statectl's own when it has LangGraph, else
    the active or ./.venv virtualenv's (as `schema TARGET` chooses)."""
    from statectl.project.introspect import interpreter

    there = interpreter(python)
    return there if there is not None else sys.executable


class Writer:
    """A running writer: rows go in as JSON lines, answers come back as JSON objects."""

    def __init__(self, python: str, *args: str) -> None:
        from statectl.project.writer_base import BOOT

        self.python = python
        self._err: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (a full stderr pipe would block the writer; closed with the object)
        try:
            self.proc = subprocess.Popen(
                [python, "-c", BOOT, HERE, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        except FileNotFoundError:
            raise StatectlError(f"--python {python}: no such interpreter") from None
        except PermissionError:
            raise StatectlError(f"--python {python}: not an executable") from None

    def send(self, rows: Iterable[dict[str, Any]], encode: Callable[[Any], bytes]) -> None:
        """Rows to the writer; stops early where the writer has stopped reading (its answer says why)."""
        assert self.proc.stdin is not None
        try:
            for row in rows:
                self.proc.stdin.write(encode(row) + b"\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def line(self, row: dict[str, Any], encode: Callable[[Any], bytes]) -> None:
        """One row to the writer, which goes on reading (`send` ends the rows)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode(row) + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def answers(self) -> Iterable[dict[str, Any]]:
        """Each answer as it comes (`replay` streams one per step)."""
        from statectl.project.writer_base import MARK

        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            if MARK in line:
                yield json.loads(line.rpartition(MARK)[2])

    def answer(self) -> dict[str, Any]:
        """The next answer, the writer still running (`load`'s); an error answer, or none because
        the writer stopped, is a `StatectlError`."""
        for answer in self.answers():
            if "error" in answer:
                self.proc.wait()
                raise StatectlError(answer["error"], answer.get("hint"))
            return answer
        return self.result()  # (none: says why the writer stopped)

    def result(self) -> dict[str, Any]:
        """The last answer; an error answer (or none at all) is a `StatectlError`."""
        last: dict[str, Any] | None = None
        for answer in self.answers():
            last = answer
            if "error" in answer:
                break
        self.proc.wait()
        if last is None:
            self._err.seek(0)
            tail = (self._err.read().decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1][:300]
            raise StatectlError(f"the writer in {self.python} stopped: {tail}")
        if "error" in last:
            raise StatectlError(last["error"], last.get("hint"))
        return last

    def interrupt(self, grace: float = 5.0) -> None:
        """Ctrl+C: let the writer stop as LangGraph stops on Ctrl+C (what it saved stays), then end it."""
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.stop()

    def stop(self) -> None:
        """End the writer now (Ctrl+C): its transaction is never committed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
