"""What `statectl size` reports of a store's bytes: its parts, its largest threads, a thread's
channels (apart from `statectl.model`, which every command loads)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Part:
    """One part of the store: a table, its indexes, free space."""

    name: str
    bytes: int
    note: str = ""


@dataclass
class ThreadSize:
    thread_id: str
    checkpoints: int
    namespaces: int
    bytes: int
    """Checkpoint rows (and a Postgres thread's blobs) plus pending writes."""
    first: int | None = None
    """The oldest root checkpoint's stored size."""
    last: int | None = None
    """The newest root checkpoint's stored size."""

    @property
    def per_checkpoint(self) -> int:
        return self.bytes // self.checkpoints if self.checkpoints else 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "per_checkpoint": self.per_checkpoint}


@dataclass
class ChannelSize:
    channel: str
    history: int
    """Bytes stored for this channel over the thread's root checkpoints (every copy counted)."""
    latest: int
    """Bytes in the newest root checkpoint."""
    stored: int = 0
    """Checkpoints (SQLite, exports) or versions (Postgres) that hold it."""
    writes: int = 0
    """Bytes of pending writes to it."""


@dataclass
class StoreSize:
    label: str
    total: int
    parts: list[Part]
    threads: list[ThreadSize]
    thread_count: int
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "db": self.label,
            "total": self.total,
            "parts": [asdict(p) for p in self.parts],
            "threads": self.thread_count,
            "largest": [t.to_json() for t in self.threads],
            **({"notes": self.notes} if self.notes else {}),
        }


@dataclass
class ThreadChannels:
    thread_id: str
    checkpoints: int
    channels: list[ChannelSize]
    steps: list[tuple[int | None, int]]
    """(step, stored bytes) of each root checkpoint, oldest first: the growth of the thread."""
    how: str
    """What a channel's bytes are: copies re-stored in every checkpoint, or versions stored once."""
    bookkeeping: int = 0
    """Checkpoint bytes outside the channels' values: versions, versions seen, ids."""

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "how": self.how,
            "bookkeeping": self.bookkeeping,
            "channels": [asdict(c) for c in self.channels],
            "steps": [{"step": s, "bytes": b} for s, b in self.steps],
        }
