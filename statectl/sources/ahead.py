"""A source that reads a batch of threads' rows together, where its source can (Postgres)."""

from __future__ import annotations

from typing import Any

from statectl.model import CheckpointRecord, WriteRecord
from statectl.sources.base import Source

READS = {
    "checkpoints": "checkpoints_of",
    "raw_checkpoints": "raw_checkpoints_of",
    "channel_storage": "channel_storage_of",
    "write_tasks": "write_tasks_of",
}
"""A per-thread read -> the source's method doing it for many threads in one round of queries."""
TOGETHER = {"raw_checkpoints": "rows_and_channels_of", "channel_storage": "rows_and_channels_of"}
"""Reads a source does together where it can: its method gives each read's answers."""


def batched(source: Source) -> bool:
    """Does the source read many threads' checkpoints at once (`Ahead` pays off)?"""
    return source.batches_threads


class Ahead:
    """`source` as a whole-store command (`prune`'s plan, `doctor`) reads it a batch of threads
    at a time: each of `READS` is asked once for every thread of the batch, the first time any
    of them is asked (a round trip per batch, not per thread; Postgres); all else, and a thread
    outside the batch, is the source's."""

    def __init__(self, source: Source, thread_ids: list[str]) -> None:
        self._source, self._ids = source, list(thread_ids)
        self._in = set(self._ids)
        self._read: dict[str, dict[Any, Any]] = {}

    def _of(self, name: str, thread_id: str) -> tuple[bool, Any]:
        """(read ahead, the answer) for `thread_id`'s `name`."""
        if thread_id not in self._in:
            return False, None
        if name not in self._read:
            together = getattr(self._source, TOGETHER.get(name, ""), None)
            if together is not None:
                self._read.update(together(self._ids))
            else:
                many = getattr(self._source, READS.get(name, ""), None)
                if many is None:
                    return False, None
                self._read[name] = many(self._ids)
        return True, self._read[name].get(thread_id)

    def seed(self, name: str, found: dict[str, Any]) -> None:
        """What `name` gives each thread of `found`, read by the caller (for the threads of the
        batch that need it); any other thread asks the source."""
        self._read[name] = found

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        ahead, rows = self._of("checkpoints", thread_id)
        if not ahead:
            return self._source.checkpoints(thread_id, checkpoint_ns)
        return [r for r in rows or () if checkpoint_ns is None or r.checkpoint_ns == checkpoint_ns]

    def writes_of(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], list[WriteRecord]]:
        """`writes_of` these keys: from the batch's writes when every key is of the batch."""
        many = getattr(self._source, "thread_writes_of", None)
        if many is None or not all(k[0] in self._in for k in keys):
            return self._source.writes_of(keys)
        if "writes_of" not in self._read:
            self._read["writes_of"] = many(self._ids)
        found = self._read["writes_of"]
        return {k: found.get(k, []) for k in keys}

    def __getattr__(self, name: str) -> Any:
        one = getattr(self._source, name)  # (what the source lacks, this lacks too)
        if name not in self._read and (name not in READS or not hasattr(self._source, READS[name])):
            return one

        def read(thread_id: str) -> Any:
            ahead, found = self._of(name, thread_id)
            return one(thread_id) if not ahead or found is None else found  # (none: the source says why)

        return read
