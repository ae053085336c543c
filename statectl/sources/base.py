"""What every checkpoint source shares: the `Source` protocol, paging, write order, metadata."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from statectl.errors import NotFoundError, SourceError
from statectl.model import CheckpointRecord, ThreadPage, ThreadSummary, WriteRecord
from statectl.settings import current

T = TypeVar("T")


def timeout(default: float, env: str = "STATECTL_TIMEOUT") -> float:
    """`--timeout`, else the variable `env`, else `default` (seconds)."""
    if (given := current().timeout) is not None:
        return given
    raw = os.environ.get(env)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SourceError(f"{env} is not a number of seconds: {raw!r}") from None
    if value <= 0:
        raise SourceError(f"{env} must be more than 0 seconds")
    return value


class Source(Protocol):
    """Read-only access to one checkpoint store. Every method returns fresh data.

    Optional: `empty_channels(thread_id) -> {key: empty value}`, state keys the store proves are
    reducer channels read as their type's empty value before any write (a `langgraph dev`
    folder's server record; an export of one)."""

    label: str
    """What was opened, for messages (never contains a password)."""
    kind: str
    """sqlite, postgres, export, folder (`langgraph dev`) or server."""

    @property
    def notes(self) -> Sequence[str]:
        """What the store cannot say, found while opening it (shown under a command's output)."""

    @property
    def recorded_graph(self) -> Any:
        """A channel specification the store itself recorded (`export --graph`), as written; None."""

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
    ) -> ThreadPage:
        """Threads from SQL and metadata alone: at most `limit`, starting after thread `after`
        (keyset pagination), ordered `recent` (newest checkpoint first) or by `id`; None: the
        source's default (`default_sort()`). `match`: only ids containing it, ignoring case;
        `status`: only threads with one of these statuses (`after` is then one of them too)."""

    def default_sort(self) -> str:
        """`recent` where ordering by recency is cheap, `id` where it needs a full scan."""

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        """Checkpoint rows of a thread (one namespace, or all with None), newest id first; none
        for a thread the store does not hold (a server that rejects the id: NotFoundError)."""

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        """The stored `(type, blob)` of a checkpoint, undecoded."""

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:
        """The decoded Checkpoint dict (`v`, `id`, `ts`, `channel_values`, ...).

        `channels`: the state channels the caller will read (internal channels are always
        wanted); a source that stores channels apart (Postgres) fetches only those, others may
        return more."""

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        """Writes pending on a checkpoint, in LangGraph's `(task_path, task_id, idx)` order."""

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        """Writes to one channel in a namespace, by checkpoint id, each list in replay order (what
        a delta channel is replayed from; none from a server, whose snapshots come whole)."""

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """The task path of every write in a namespace, oldest checkpoint first and in task path
        order within one (no values read); empty where writes carry no task path."""

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        """(thread_id, checkpoint_ns) of every checkpoint with this id (for error messages)."""

    def close(self) -> None: ...


RAW_BYTES = 16 << 20
"""The checkpoint bytes a whole-thread read (`raw_checkpoints`, for `doctor`) holds at once; a
longer thread's other rows are left out, and its caller reads them one at a time (a
10,000-checkpoint thread holds its transcript 10,000 times: 8.5 GB read at once before)."""

MAX_FILE_BYTES = 4 << 30
"""The largest file a source reads whole (a `langgraph dev` folder's pickle files); more, and it
says so (`STATECTL_MAX_FILE_BYTES` changes it)."""


READ_CHUNK = 1 << 20
"""How much `read_regular` reads at a time: what it holds beyond the bytes read so far (one read
of the whole limit makes CPython reserve the limit first: 4 GiB of address space per file)."""


def whole_number(var: str, default: int) -> int:
    """The whole number in the variable `var` (unset or empty: `default`); else one clear line."""
    raw = os.environ.get(var)
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise SourceError(f"{var} is not a whole number: {raw!r}") from None
    if value <= 0:
        raise SourceError(f"{var} must be more than 0")
    return value


def _what(mode: int) -> str:
    import stat

    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a pipe (FIFO)"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path, head: Callable[[bytes], str | None] | None = None) -> bytes | None:
    """A file read whole if it is a regular file of bounded size (None: it does not exist). A
    folder, a FIFO (it would block forever), a device (/dev/zero never ends), a socket or a file
    larger than MAX_FILE_BYTES is one clear error; a symlink is followed only to such a regular
    file. Read in chunks of READ_CHUNK: memory holds the bytes read, never the limit up front.
    `head`: given the first chunk, what is wrong with the file (None: nothing); checked before
    the rest is read, so a 3 GB file of zeros is refused after 1 MB."""
    import stat

    limit = whole_number("STATECTL_MAX_FILE_BYTES", MAX_FILE_BYTES)
    try:  # non-blocking: a FIFO (there, or swapped in after a check) never blocks the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)  # (of what was opened, not of the name: nothing swapped in between)
    except OSError as exc:
        os.close(fd)
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"{path} is {_what(st.st_mode)}, not a regular file: not read")
        if st.st_size > limit:
            raise SourceError(
                f"{path} is {st.st_size:,} bytes, more than statectl reads whole ({limit:,})",
                "STATECTL_MAX_FILE_BYTES=N raises the limit",
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            try:
                chunk = os.read(fd, min(READ_CHUNK, limit + 1 - size))
            except OSError as exc:
                raise SourceError(f"cannot read {path}: {exc.strerror}") from None
            if not chunk:
                break
            if not chunks and head is not None and (wrong := head(chunk)):
                raise SourceError(f"{path} {wrong}: not read")
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise SourceError(f"{path} grew past {limit:,} bytes while being read: not read")
        return b"".join(chunks)
    except MemoryError:  # (a process with a small address space: `ulimit -v`)
        raise SourceError(
            f"{path} is {st.st_size:,} bytes, more than this process can hold in memory: not read"
        ) from None
    finally:
        os.close(fd)


def namespaces_of(source: Source, thread_id: str) -> set[str]:
    """A thread's namespaces: from the index alone where the source can (SQLite, Postgres:
    `namespace_names`), else from its checkpoints."""
    distinct = getattr(source, "namespace_names", None)
    if distinct is not None:
        return distinct(thread_id)
    return {r.checkpoint_ns for r in source.checkpoints(thread_id, None)}


def replay_order(writes: Iterable[WriteRecord]) -> list[WriteRecord]:
    """Writes in the order LangGraph applies them (`WriteRecord.sort_key`)."""
    return sorted(writes, key=lambda w: w.sort_key)


def by_checkpoint(writes: Iterable[WriteRecord]) -> dict[str, list[WriteRecord]]:
    """`channel_writes`' answer: writes grouped by checkpoint id, each group in replay order."""
    out: dict[str, list[WriteRecord]] = {}
    for w in writes:
        out.setdefault(w.checkpoint_id or "", []).append(w)
    return {k: replay_order(v) for k, v in out.items()}


def metadata_of(raw: bytes | str | None) -> dict:
    """A checkpoint's metadata column (SQLite's JSON text or bytes, Postgres' JSONB as text) as
    a dict: what is not JSON says so (`$undecoded`), a pickle (langgraph 0.0.x) is read inertly
    when asked, JSON that is not an object is kept under `$value`."""
    if raw is None:
        return {}
    from statectl.codec.values import cut_deep

    data = raw if isinstance(raw, bytes) else str(raw).encode()
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        from statectl.codec.decode import decode_typed, sniff

        if "depth" in str(exc):  # (orjson reads 1,024 levels)
            return {"$undecoded": "metadata is JSON nested too deeply to read"}
        if not data or sniff(data) != "pickle":
            return {"$undecoded": "metadata is not JSON"}
        if not current().unpickle:  # langgraph 0.0.x with serde=pickle pickled the metadata too
            return {"$undecoded": "metadata is a pickle (--unpickle-inert reads it)"}
        value = decode_typed("pickle", data)
    if isinstance(value, dict) and b'"lc"' in data:
        # langgraph before 0.6 kept what nodes returned (`writes`), messages as LangChain's `lc: 1`
        # constructor dicts: read as the messages they are, like the checkpoints' JSON rows
        from statectl.codec.decode import decode_typed
        from statectl.errors import DecodeError

        try:
            value = decode_typed("json", data)
        except DecodeError:  # (nested deeper than Python's parser goes: kept as orjson read it)
            pass
    value = cut_deep(value)  # (what walks it, orjson's writer among them, stops at 254 levels)
    return value if isinstance(value, dict) else {"$value": value}


def like(text: str) -> str:
    """A LIKE pattern for ids containing `text` (its `%`, `_` and `\\` escaped with `\\`)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def ids_after(query: Callable[..., list[tuple]], mark: str, after: str | None, limit: int, text: str = "") -> list[str]:
    """`thread_ids_after` of a SQL source: the first `limit` distinct thread ids after `after`
    (None: from the first), in the primary key's order, from its index alone. `mark`: the
    driver's placeholder; `text`: a condition that keeps text ids only (SQLite's)."""
    where = [c for c in (text, None if after is None else f"thread_id > {mark}") if c]
    rows = query(
        "SELECT DISTINCT thread_id FROM checkpoints "
        + ("WHERE " + " AND ".join(where) + " " if where else "")
        + f"ORDER BY thread_id LIMIT {mark}",
        (limit,) if after is None else (after, limit),
    )
    return [t for (t,) in rows]


def page_summaries(
    out: list[ThreadSummary],
    recent: Callable[[ThreadSummary], str],
    limit: int | None,
    after: str | None,
    sort: str | None,
    status: frozenset[str] | None,
) -> ThreadPage:
    """Threads read whole into memory (export files, langgraph dev folders): ordered newest first
    by `recent` (ties by id) or by id, filtered by status, then paged."""
    out = sorted(out, key=lambda s: (recent(s), s.thread_id), reverse=True)
    if sort == "id":
        out.sort(key=lambda s: s.thread_id)
    if status:
        out = [s for s in out if s.status in status]
    return page(out, limit, after, key=lambda s: s.thread_id)


def page(rows: list[T], limit: int | None, after: str | None, key: Callable[[T], str]) -> ThreadPage:
    """The rows after the one whose key is `after`, at most `limit` of them (None or 0: all)."""
    total = len(rows)
    if after is not None:
        keys = [key(r) for r in rows]
        if after not in keys:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
        rows = rows[keys.index(after) + 1 :]
    out = ThreadPage(rows[:limit] if limit else rows)
    out.total, out.more = total, len(out) < len(rows)
    return out


def chunks_after(chunks: Iterable[list[T]], after: str, key: Callable[[T], str]) -> Iterator[list[T]]:
    """The chunks' rows after the one whose key is `after` (`page`'s error where none is, raised
    when the first chunk is asked for: before anything is written)."""
    it = iter(chunks)
    for chunk in it:
        keys = [key(r) for r in chunk]
        if after in keys:
            if rest := chunk[keys.index(after) + 1 :]:
                yield rest
            yield from it
            return
    raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")


def page_lazily(rows: Iterable[T], limit: int | None, after: str | None, key: Callable[[T], str]) -> ThreadPage:
    """`page` over rows read only as far as the page needs: `total` is None unless all were read."""
    it, seen = iter(rows), 0
    if after is not None:
        for seen, r in enumerate(it, 1):  # noqa: B007 (counted for `total`)
            if key(r) == after:
                break
        else:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
    out = ThreadPage()
    for r in it:
        if limit and len(out) == limit:
            out.more = True
            return out
        out.append(r)
    out.total = seen + len(out)
    return out
