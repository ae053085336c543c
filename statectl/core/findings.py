"""`doctor`'s findings: what each says, how severe, where; the report that gathers them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from statectl.model import CheckpointRecord

INFO, WARNING, ERROR = "info", "warning", "error"
LEVELS = (INFO, WARNING, ERROR)
THREADS_SHOWN = 20
"""Threads named per grouped finding (the count says how many in all)."""
LARGE_CHANNEL = 1_000_000
"""A channel's newest value this large (bytes) is a finding: every step that writes it stores it again."""
JUMP = 10
"""A checkpoint this many times its parent's size (and at least `JUMP_MIN`) is a jump."""
JUMP_MIN = 256_000
BOOKKEEPING_MIN = 256_000
"""Bookkeeping (versions, versions seen, ids) this large and larger than the state is a note."""
PRUNE_KEEP = 10
"""The --keep-last of the prune plan doctor reports."""


@dataclass
class Finding:
    severity: str
    check: str
    """integrity, load, schema or operations."""
    kind: str
    message: str
    fix: str | None = None
    thread_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    threads: list[str] = field(default_factory=list)
    """A grouped finding's threads (the first THREADS_SHOWN)."""
    count: int = 1
    """How many rows, checkpoints or threads the finding stands for."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": self.severity, "check": self.check, "kind": self.kind}
        for k in ("thread_id", "checkpoint_ns", "checkpoint_id"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        out["message"] = self.message
        if self.fix:
            out["fix"] = self.fix
        if self.threads:
            out["threads"] = self.threads
        out["count"] = self.count
        return out


@dataclass
class Report:
    label: str
    findings: list[Finding] = field(default_factory=list)
    threads: int = 0
    checkpoints: int = 0
    not_checked: list[str] = field(default_factory=list)
    """What this run could not check, and why."""

    def worst(self) -> str | None:
        levels = {f.severity for f in self.findings}
        return next((lvl for lvl in reversed(LEVELS) if lvl in levels), None)

    def at_least(self, level: str) -> list[Finding]:
        return [f for f in self.findings if LEVELS.index(f.severity) >= LEVELS.index(level)]

    def to_json(self) -> dict[str, Any]:
        counts = {lvl: sum(f.severity == lvl for f in self.findings) for lvl in LEVELS}
        return {
            "db": self.label,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "counts": counts,
            "findings": [f.to_json() for f in sorted_findings(self.findings)],
            "not_checked": self.not_checked,
        }


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-LEVELS.index(f.severity), f.check, f.kind, f.thread_id or ""))


@dataclass
class Options:
    older_than: datetime | None = None
    """Interrupted or failed threads last updated before this are reported."""
    stale: str = INFO
    """Their severity: a warning where the user set the threshold (`--older-than`)."""
    classes: Callable[[list[tuple[str, str]]], list[dict[str, Any]]] | None = None
    """Looks (module, name) pairs up in the project's interpreter (`project.classes.check`)."""
    schema: Any = None
    """A `core.schema.Schema` (`--graph TARGET`): each thread's newest state is checked against it."""
    plan: bool = True
    """Report the prunable bytes of the largest threads."""


@dataclass
class Named:
    how: set[str] = field(default_factory=set)
    threads: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The first THREADS_SHOWN threads that name it, each with the newest (namespace, checkpoint)
    that does."""
    rows: int = 0


def at(r: CheckpointRecord, severity: str, check: str, kind: str, message: str, fix: str | None) -> Finding:
    return Finding(severity, check, kind, message, fix, r.thread_id, r.checkpoint_ns, r.checkpoint_id)
