"""The read model of one thread and namespace: its checkpoint rows, their parent links and
the writes pending on each, read from a source once and cached (decoded checkpoints: the most
recently used few). What LangGraph computes from them is `statectl.core.state`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property

from statectl.errors import DecodeError, NotFoundError, ThreadNotFound
from statectl.model import CheckpointRecord, WriteRecord, wanted
from statectl.sources.base import Source, namespaces_of


class ThreadHistory:
    """The checkpoints of one thread in one namespace, newest first (`records`, `by_id`), with
    their parents, children and writes; `refresh` reads them again."""

    def __init__(
        self, source: Source, thread_id: str, checkpoint_ns: str = "", keys: frozenset[str] | None = None
    ) -> None:
        self.source = source
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.keys = keys
        """Only these state keys (None: all): checkpoints hold just them, and a source that
        stores channels apart fetches no other blob."""
        self.records: list[CheckpointRecord] = []
        self.by_id: dict[str, CheckpointRecord] = {}
        self._read()

    def _read(self) -> None:
        source, thread_id, checkpoint_ns = self.source, self.thread_id, self.checkpoint_ns
        records = source.checkpoints(thread_id, checkpoint_ns)
        if not records:
            every = source.checkpoints(thread_id, None)
            if not every:
                raise ThreadNotFound(
                    f"no thread {thread_id!r} in {source.label}", "run `statectl threads` to list the threads"
                )
            found = sorted({r.checkpoint_ns for r in every})
            listed = ", ".join(repr(n) for n in found[:5]) + (", ..." if len(found) > 5 else "")
            raise NotFoundError(
                f"thread {thread_id!r} has no checkpoints in namespace {checkpoint_ns!r} (its namespaces: {listed})",
                f"use --ns {found[0]!r}" if len(found) == 1 else f"give one of them with --ns, e.g. --ns {found[-1]!r}",
            )
        self.records = records
        self.by_id = {r.checkpoint_id: r for r in records}
        self._checkpoints: dict[str, dict] = {}
        self._writes: dict[str, list[WriteRecord]] = {}
        self._channel_writes: dict[str, dict[str, list[WriteRecord]]] = {}

    def signature(self) -> tuple[int, str, int]:
        """What tells that the thread changed: how many checkpoints, the newest, and how many
        writes it holds (an interrupt or an error lands after its checkpoint)."""
        newest = self.records[0].checkpoint_id
        return len(self.records), newest, len(self.writes(newest))

    def refresh(self) -> bool:
        """Read the rows again; True (and every cached read and derived fact dropped) when the
        thread changed (`signature`)."""
        records = self.source.checkpoints(self.thread_id, self.checkpoint_ns)
        if (
            records
            and [(r.checkpoint_id, r.parent_checkpoint_id) for r in records]
            == [(r.checkpoint_id, r.parent_checkpoint_id) for r in self.records]  # (rows never change)
            and len(self.source.writes(self.thread_id, self.checkpoint_ns, records[0].checkpoint_id))
            == self.signature()[2]
        ):
            return False
        for name in [n for cls in type(self).__mro__ for n, v in vars(cls).items() if isinstance(v, cached_property)]:
            self.__dict__.pop(name, None)
        self._read()
        return True

    CACHED = 16
    """Decoded checkpoints kept (the most recently used): a step needs its own and its parent's,
    a delta channel its ancestors'. Bounded, so that walking a long thread (`log -p`, the TUI)
    holds a few checkpoints, not the thread; a message shared by many is decoded once anyway
    (`decode.MEMO`)."""

    def checkpoint(self, checkpoint_id: str) -> dict:
        cached = self._checkpoints.pop(checkpoint_id, None)
        if cached is not None:
            self._checkpoints[checkpoint_id] = cached  # most recently used last
            return cached
        ck = self.source.checkpoint(self.thread_id, self.checkpoint_ns, checkpoint_id, self.keys)
        if self.keys is not None and isinstance(ck.get("channel_values"), dict):
            ck = {**ck, "channel_values": {k: v for k, v in ck["channel_values"].items() if wanted(k, self.keys)}}
        self._checkpoints[checkpoint_id] = ck
        if len(self._checkpoints) > self.CACHED:
            del self._checkpoints[next(iter(self._checkpoints))]
        return ck

    def writes(self, checkpoint_id: str) -> list[WriteRecord]:
        if checkpoint_id not in self._writes:
            self._writes[checkpoint_id] = self.source.writes(self.thread_id, self.checkpoint_ns, checkpoint_id)
        return self._writes[checkpoint_id]

    def prefetch_writes(self, checkpoint_ids: Iterable[str]) -> None:
        """Read the writes of these checkpoints together (a few hundred a query where the source
        can), not one query each: `log` of a long thread asks for every one of them."""
        wanted = [c for c in dict.fromkeys(checkpoint_ids) if c not in self._writes]
        if not self.source.reads_many or len(wanted) < 2:
            return
        for (_t, _ns, cid), ws in self.source.writes_of(
            [(self.thread_id, self.checkpoint_ns, c) for c in wanted]
        ).items():
            self._writes[cid] = ws

    def channel_writes(self, channel: str) -> dict[str, list[WriteRecord]]:
        if channel not in self._channel_writes:
            self._channel_writes[channel] = self.source.channel_writes(self.thread_id, self.checkpoint_ns, channel)
        return self._channel_writes[channel]

    @cached_property
    def namespaces(self) -> set[str]:
        return namespaces_of(self.source, self.thread_id)

    @cached_property
    def latest(self) -> dict:
        """The newest checkpoint that decodes: what the thread's channels look like."""
        for rec in self.records:
            try:
                return self.checkpoint(rec.checkpoint_id)
            except DecodeError:
                continue  # a corrupt checkpoint must not hide the others
        return {"channel_values": {}, "channel_versions": {}, "versions_seen": {}}

    @cached_property
    def task_paths(self) -> list[str]:
        """The task path of every write in this namespace, oldest checkpoint first."""
        return self.source.task_paths(self.thread_id, self.checkpoint_ns)

    def record(self, checkpoint_id: str) -> CheckpointRecord:
        try:
            return self.by_id[checkpoint_id]
        except KeyError:
            raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {self.thread_id!r}") from None

    def resolve(self, selector: str | None) -> CheckpointRecord:
        """A checkpoint by full id, unique prefix or suffix, the start of the 12 characters `log`
        shows (as git takes an abbreviated hash), `latest`, or step number."""
        sel = (selector or "latest").strip()
        where = f"thread {self.thread_id!r}" + (f" namespace {self.checkpoint_ns!r}" if self.checkpoint_ns else "")
        if sel == "latest":
            return self.records[0]
        if sel in self.by_id:
            return self.by_id[sel]
        if sel.lstrip("-").isdigit() and len(sel) < 10:
            step = int(sel)
            found = [r for r in self.records if r.step == step]
            if len(found) == 1:
                return found[0]
            if found:
                listed = ", ".join(f"{r.checkpoint_id} ({r.source})" for r in found)
                raise NotFoundError(
                    f"step {step} is ambiguous in {where}: {len(found)} checkpoints (branches): {listed}",
                    "name one by id",
                )
            steps = sorted({r.step for r in self.records if r.step is not None})
            no_step = NotFoundError(
                f"no checkpoint at step {step} in {where}",
                f"steps run from {steps[0]} to {steps[-1]}" if steps else None,
            )
            if len(sel) < 4 or sel.startswith("-"):
                raise no_step
        low = sel.lower()
        shown = len(low) >= 4  # (the start of the 12 characters log shows: `e55634` of `e55634b1c2d3`)
        found = [
            r
            for r in self.records
            if r.checkpoint_id.startswith(low)
            or r.checkpoint_id.endswith(low)
            or (shown and r.checkpoint_id[-12:].startswith(low))
        ]
        if len(found) == 1:
            return found[0]
        if found:
            listed = ", ".join(r.checkpoint_id for r in found[:5]) + (" ..." if len(found) > 5 else "")
            raise NotFoundError(f"checkpoint {sel!r} is ambiguous in {where}: matches {listed}", "give more characters")
        if sel.isdigit() and len(sel) < 10:  # (a number that is no step and no id either)
            raise no_step
        if len(low) == 36:  # a full id of another thread or namespace: say whose it is
            for t, ns in self.source.locate(low):
                if (t, ns) != (self.thread_id, self.checkpoint_ns):
                    owner = f"thread {t!r}" + (f" namespace {ns!r}" if ns else "")
                    raise NotFoundError(
                        f"checkpoint {sel} belongs to {owner}, not to {where}",
                        "a selector names a checkpoint of this thread and namespace",
                    )
        raise NotFoundError(
            f"no checkpoint {sel!r} in {where}", f"see `statectl log {self.thread_id}` for its checkpoints"
        )

    def parent(self, rec: CheckpointRecord) -> CheckpointRecord | None:
        """The checkpoint `rec` was made from, where the database holds it."""
        return self.by_id.get(rec.parent_checkpoint_id or "")

    def ancestry(self, rec: CheckpointRecord | None) -> Iterator[CheckpointRecord]:
        """`rec`, its parent, its parent's parent, ... as far as the database holds them, and
        never round a loop (a copied or hand-edited database: see `loops`)."""
        seen: set[str] = set()
        while rec is not None and rec.checkpoint_id not in seen:
            seen.add(rec.checkpoint_id)
            yield rec
            rec = self.parent(rec)

    @cached_property
    def loops(self) -> list[list[str]]:
        """Parent chains that come back to themselves (each a list of checkpoint ids, in the order
        the chain walks them). LangGraph never writes one; a copied or edited database can."""
        state: dict[str, int] = {}  # 1: on the walk now, 2: done
        out = []
        for start in self.by_id:
            walk, rec = [], self.by_id.get(start)
            while rec is not None and state.get(rec.checkpoint_id) is None:
                state[rec.checkpoint_id] = 1
                walk.append(rec.checkpoint_id)
                rec = self.parent(rec)
            if rec is not None and state.get(rec.checkpoint_id) == 1:
                out.append(walk[walk.index(rec.checkpoint_id) :])
            for cid in walk:
                state[cid] = 2
        return out

    @property
    def loop_notes(self) -> list[str]:
        """One line per loop, naming its checkpoints."""
        return [
            f"the parent chain loops: {' → '.join(c[-12:] for c in [*loop, loop[0]])} (a copied or "
            "edited database: LangGraph never writes one); shown without going round it"
            for loop in self.loops
        ]

    def children(self) -> dict[str, list[str]]:
        """Checkpoint id -> ids of its children (more than one: a branch point)."""
        return self._children

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self.records:
            if r.parent_checkpoint_id:
                out.setdefault(r.parent_checkpoint_id, []).append(r.checkpoint_id)
        return out
