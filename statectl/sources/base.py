"""What every checkpoint source shares: the `Source` protocol, paging, write order, metadata."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from statectl.errors import NotFoundError, SourceError, StatectlError
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

    Every duty of a store type is declared here, in three parts (a new store type subclasses
    `Source` and implements the first; tests/test_source_contract.py runs every kind against
    every duty):

    - required: `threads` to `close`, without a body;
    - capabilities: class attributes a source sets where it differs from the default
      (`has_index`, `reads_many`, `batches_threads`, `reads_row_together`, `shallow`, `era`,
      `origin`, `as_stored`);
    - optional: methods with a default body, in terms of the required ones, that give what a
      source without a faster way gets (SQLite and Postgres override most of them).

    Batch reads for `sources.ahead.Ahead` (`checkpoints_of`, `raw_checkpoints_of`,
    `channel_storage_of`, `write_tasks_of`, `rows_and_channels_of`, `thread_writes_of`: a
    thread's read for many threads in one round trip) are a source's where `batches_threads`
    is set (Postgres)."""

    label: str
    """What was opened, for messages (never contains a password)."""
    kind: str
    """sqlite, postgres, export, folder (`langgraph dev`) or server."""

    @property
    def notes(self) -> Sequence[str]:
        """What the store cannot say, found while opening it (shown under a command's output)."""
        return ()

    recorded_graph: Any = None
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

    # -- capabilities: what a source can do faster or differently (class attributes) ------------
    has_index: bool = False
    """Thread ids and namespaces come from an index, a page at a time (SQLite, Postgres): `Store`
    pages ids (`thread_ids_after`), streams and narrows threads in SQL (`stream_threads`,
    `threads_where`); without one it lists `threads`."""
    reads_many: bool = False
    """`writes_of` and `first_checkpoints` read many checkpoints in one query (SQLite, Postgres):
    `log`, `threads`' previews and `doctor` ask once; else thread by thread, as they need them."""
    batches_threads: bool = False
    """The batch reads `Ahead` uses are this source's (Postgres): `prune`'s plan and `doctor`
    read a batch of threads in one round trip."""
    reads_row_together: bool = False
    """`raw_row` reads a checkpoint's blob and metadata in one pass (SQLite): `export` lists
    checkpoints without their metadata and reads it with each blob."""
    shallow: bool = False
    """A ShallowPostgresSaver's store: one checkpoint per namespace, nothing to prune."""
    era: str = ""
    """The SQLite layout (`thread_ts`: langgraph 0.0.x/0.1.x, which LangGraph 1.x cannot open)."""
    origin: str | None = None
    """The kind of store the rows were read from (an export's); None: this source's `kind`."""
    as_stored: bool = True
    """The rows as the store holds them: each checkpoint's serializer type and bytes. False: a
    server's JSON answers (`raw_checkpoint` gives its snapshot), whose types and sizes are not
    the store's: `doctor --types` and the growth checks say so instead of reading them."""

    # -- optional duties, with what a source lacking them gets -----------------------------------
    def thread_ids(self, prefix: str, limit: int) -> list[str]:
        """Up to `limit` thread ids starting with `prefix` (shell completion). Default: `threads`
        by id whose ids contain `prefix`."""
        return [t.thread_id for t in self.threads(limit, None, "id", prefix or None)]

    def thread_ids_after(self, after: str | None, limit: int) -> list[str]:
        """A page of thread ids in the index's order (`has_index`). Default: a page of `threads`
        by id."""
        return [t.thread_id for t in self.threads(limit, after, "id")]

    def count_threads(self) -> int:
        """How many threads the store holds. Default: `threads` listed and counted."""
        return len(self.threads(None))

    def suggest_ids(self, limit: int) -> list[str]:
        """Up to `limit` thread ids a "did you mean" compares with. Default: `threads` by id."""
        return [t.thread_id for t in self.threads(limit, None, "id", None, None)]

    def namespace_names(self, thread_id: str) -> set[str]:
        """A thread's namespaces. Default: from its checkpoints' rows."""
        return {r.checkpoint_ns for r in self.checkpoints(thread_id, None)}

    def stream_threads(
        self,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        after: str | None = None,
    ) -> Iterator[list[ThreadSummary]] | None:
        """Every thread `threads` lists, in chunks as they are read. Default: None (the source
        cannot stream: `Store` lists `threads`)."""
        return None

    def threads_where(
        self, where: Any, sort: str | None = None, match: str | None = None, status: frozenset[str] | None = None
    ) -> Iterable[ThreadSummary]:
        """The threads a `status.ThreadFilter` may keep, narrowed in SQL where it can (the filter
        is applied after). Default: every thread `threads` lists."""
        return self.threads(None, None, sort, match, status)

    def first_checkpoints(self, thread_ids: list[str], checkpoint_ns: str = "") -> dict[str, CheckpointRecord]:
        """The oldest checkpoint of a namespace in each thread (`reads_many`). Default: from each
        thread's rows."""
        out: dict[str, CheckpointRecord] = {}
        for tid in thread_ids:
            if rows := self.checkpoints(tid, checkpoint_ns):
                out[tid] = rows[-1]
        return out

    def writes_of(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], list[WriteRecord]]:
        """`writes` of several (thread, namespace, checkpoint) at once (`reads_many`). Default:
        one `writes` each."""
        return {k: self.writes(*k) for k in keys}

    def raw_row(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None, dict]:
        """`raw_checkpoint` and the row's metadata read together (`reads_row_together`).
        Default: `raw_checkpoint`, and the metadata of the thread's row."""
        type_, blob = self.raw_checkpoint(thread_id, checkpoint_ns, checkpoint_id)
        row = next((r for r in self.checkpoints(thread_id, checkpoint_ns) if r.checkpoint_id == checkpoint_id), None)
        return type_, blob, dict(row.metadata or {}) if row is not None else {}

    def raw_checkpoints(self, thread_id: str) -> Mapping[tuple[str, str], tuple[str | None, bytes | None]]:
        """Every checkpoint of a thread as `raw_checkpoint` gives it, at once (`doctor`). Default:
        none (the caller reads each with `raw_checkpoint`)."""
        return {}

    def empty_channels(self, thread_id: str) -> dict[str, Any]:
        """State keys the store proves are reducer channels read as their type's empty value
        before any write (a `langgraph dev` folder's server record; an export of one). Default:
        none."""
        return {}

    def storage(self, limit: int | None = 20) -> Any:
        """`statectl size`: the store's parts and its largest threads (a `sizes.StoreSize`).
        Default: one clear line, the store does not say how it stores a thread."""
        raise StatectlError(
            f"{self.label}: `size` reads SQLite files, Postgres databases, exports and langgraph dev folders",
            "a server does not say how it stores a thread",
        )

    def channel_storage(self, thread_id: str) -> Any:
        """A thread's bytes by channel (a `sizes.ThreadChannels`), where the store keeps each
        channel's versions apart (Postgres, a `langgraph dev` folder). Default: None (`core.size`
        counts them in each checkpoint's blob)."""
        return None

    def orphans(self, limit: int = 1000) -> dict[str, list[tuple]] | None:
        """`doctor`: writes (and blob versions) no checkpoint holds. Default: None (not listed:
        `doctor` says it did not check)."""
        return None

    def drop_bytes(self, thread_id: str, drop: list[tuple[str, str]]) -> int:
        """`prune`'s plan: the bytes of these checkpoints and their writes. Default: each
        checkpoint's blob and writes read and measured."""
        total = 0
        for ns, cid in drop:
            _, blob = self.raw_checkpoint(thread_id, ns, cid)
            total += len(blob or b"") + sum(len(w.blob or b"") for w in self.writes(thread_id, ns, cid))
        return total

    def channel_keys(self, thread_id: str) -> dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]:
        """`prune`'s plan: (namespace, checkpoint id) -> the channels each checkpoint stores and
        versions, in one query. Default: none (the plan reads each checkpoint)."""
        return {}

    def channel_keys_of(
        self, thread_ids: list[str]
    ) -> dict[str, dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]]:
        """`channel_keys` of many threads at once (`batches_threads`). Default: none."""
        return {}

    def write_tasks(self, thread_id: str) -> dict[tuple[str, str], set[str]] | None:
        """`prune`: (namespace, checkpoint id) -> the tasks that wrote on it, in one query.
        Default: None (the plan reads each checkpoint's writes)."""
        return None

    def simple_plans_of(
        self, thread_ids: list[str], keep_last: int, newer: tuple[str, str] | None
    ) -> dict[str, tuple[int, list[tuple[int, int]], list[str], int] | None]:
        """`prune`'s plan of threads with nothing to hold, in SQL. Default: none (each thread is
        planned from its rows)."""
        return {}

    def beside(self) -> Source | None:
        """This source on a second connection of its own, for a query run in another thread while
        this one reads. Default: None (one connection: each read in turn)."""
        return None

    def abandon(self) -> None:
        """Leave without waiting for a read in progress on another thread (the process is about
        to end). Default: nothing to remove."""
        return None


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
    return source.namespace_names(thread_id)


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
