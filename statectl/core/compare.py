"""What `statectl diff` compares, named as the command names it: two checkpoints of one thread,
of two threads, or of one thread in two stores (the original run against its re-run in a copy),
restricted to one state key. The CLI parses and prints; the TUI and MCP may call `named_diff`."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from statectl.core.diff import Diff, diff_across, resolve_pair
from statectl.core.diff import diff as within
from statectl.errors import NotFoundError, StatectlError, ThreadNotFound

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.core.state import ThreadView

OpenOther = Callable[[], AbstractContextManager["StoreReader"]]
"""Opens the store B is in (`diff --db-b OTHER`), when it is needed."""


def named_diff(
    store: StoreReader,
    thread: str,
    a: str | None,
    b: str | None,
    ns: str = "",
    key: str | None = None,
    internal: bool = False,
    other: OpenOther | None = None,
) -> Diff:
    """The diff `diff THREAD [A] [B]` names (`T1:A T2:B` across threads; with `other`, B in that
    store), restricted to `key` where given: a key neither checkpoint holds is NotFoundError
    naming the close ones, or the keys there are, in every form."""
    d = whole = _across(store, thread, a, b, ns, other, internal)
    if d is None:
        view = store.view(thread, ns, None if key is None else frozenset({key}))
        first, second = resolve_pair(view, a, b)
        d = within(view, first, second, internal=internal)
    if key is None:
        return d
    if not any(s is not None and isinstance(s.values, dict) and key in s.values for s in (d.a, d.b)):
        # (across threads or stores `d` is whole; within one thread it holds the key alone)
        if whole is None:
            whole = within(store.view(thread, ns), first, second)
        keys = {k for s in (whole.a, whole.b) if s is not None and isinstance(s.values, dict) for k in s.values}
        close = difflib.get_close_matches(key, sorted(keys), n=3, cutoff=0.6)
        raise NotFoundError(
            f"no state key {key!r} at either checkpoint",
            f"did you mean {' or '.join(close)}?" if close else f"keys: {', '.join(sorted(keys)) or 'none'}",
        )
    return d.only(key)


def _ref(store: StoreReader, text: str) -> tuple[str, str | None]:
    """THREAD or THREAD:CHECKPOINT (a thread id holding ':' is taken whole first)."""
    try:
        return store.thread_id(text), None
    except ThreadNotFound:
        head, sep, tail = text.rpartition(":")
        if not sep or not head:
            raise
        return store.thread_id(head), tail or None


def _across(
    store: StoreReader,
    thread: str,
    a: str | None,
    b: str | None,
    ns: str,
    other: OpenOther | None,
    internal: bool = False,
) -> Diff | None:
    """The diff of `diff` across threads or stores, or None for a diff within one thread (named as
    THREAD A B, or as T:A T:B of the same thread and store)."""
    if other is not None:  # A in --db (THREAD[:A] or THREAD A), B in --db-b (the same thread, or T2[:B])
        tid, sel_a = _ref(store, thread)
        view_a = store.view(tid, ns)
        with other() as there:
            if a is not None and b is None and (sel_a is not None or not _names_checkpoint(view_a, a)):
                # `diff T1[:A] T2[:B] --db-b OTHER`, as across threads: the second argument is B
                rec_a = view_a.resolve(sel_a)
                try:
                    tid_b, sel_b = _ref(there, a)
                except ThreadNotFound:
                    if ":" in a:
                        raise
                    tid_b, sel_b = there.thread_id(tid), a  # (`diff T:A B --db-b`: B of the same thread)
            else:
                rec_a = view_a.resolve(a if a is not None else sel_a)
                if b is not None and ":" in b:
                    tid_b, sel_b = _ref(there, b)
                else:
                    tid_b, sel_b = there.thread_id(tid), b
            view_b = there.view(tid_b, ns)
            return diff_across(view_a, rec_a, view_b, view_b.resolve(sel_b))
    try:
        view_a = store.view(thread, ns)
        sel_a = None
    except ThreadNotFound:
        if ":" not in thread or a is None:
            raise
        tid, sel_a = _ref(store, thread)
        view_a = store.view(tid, ns)
    else:
        if a is None or b is not None or _names_checkpoint(view_a, a):
            return None  # (a checkpoint of this thread: a diff within it)
    if a is None or b is not None:
        raise StatectlError("across threads, name two: statectl diff T1:CKPT T2:CKPT (or T1 T2)")
    tid_b, sel_b = _ref(store, a)
    if tid_b == view_a.thread_id:  # `diff T:A T:B`: two checkpoints of one thread, as `diff T A B`
        return within(view_a, view_a.resolve(sel_a), view_a.resolve(sel_b), internal=internal)
    view_b = store.view(tid_b, ns)
    return diff_across(view_a, view_a.resolve(sel_a), view_b, view_b.resolve(sel_b))


def _names_checkpoint(view: ThreadView, selector: str) -> bool:
    """Whether `selector` names a checkpoint of `view` (else it may name another thread)."""
    try:
        view.resolve(selector)
    except NotFoundError:
        return False
    return True
