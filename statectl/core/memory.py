"""The long-term memory store's logic: namespaces typed like threads, the namespace tree,
filters matched as LangGraph's `store.search(filter=...)` matches them, plain-text grep,
deepagents files kept in a `StoreBackend`. Pure: reads only through a `MemorySource`."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from statectl.errors import NotFoundError, StatectlError
from statectl.sources.memory.base import MemoryItem, MemorySource, Namespace, NamespaceInfo, ns_text, ns_tuple

SUGGESTED = 5
"""Close namespaces or keys named in a not-found message."""


# -- namespaces, typed like threads -------------------------------------------------------------
def parse_namespace(text: str) -> Namespace:
    """A namespace as typed: labels joined by `.` (as shown), or by `/`."""
    text = text.strip()
    if not text or text in (".", "/", "()"):  # (`()`: the empty namespace, as shown)
        return ()
    sep = "." if "." in text or "/" not in text else "/"
    return tuple(p for p in text.strip(sep).split(sep))


def close_ones(word: str, candidates: Iterable[str]) -> list[str]:
    names = list(candidates)
    near = difflib.get_close_matches(word, names, n=SUGGESTED, cutoff=0.5)
    near += [n for n in names if word.lower() in n.lower() and n not in near]
    return sorted(near[:SUGGESTED])


def _suggest(what: str, word: str, candidates: Iterable[str], where: str) -> str:
    near = close_ones(word, candidates)
    return f"no {what} {word!r} in {where}" + (f"; close: {', '.join(near)}" if near else "")


@dataclass(frozen=True)
class Resolved:
    """What a typed namespace names: one namespace (its items), and those under it."""

    namespace: Namespace | None
    """The namespace whose items to list (None: only namespaces under `prefix` hold items)."""
    prefix: Namespace
    children: list[NamespaceInfo] = field(default_factory=list)
    """Namespaces under it (not itself): the first CHILDREN_SHOWN."""
    more: int = 0
    """Namespaces under it past CHILDREN_SHOWN (counted, not held)."""


CHILDREN_SHOWN = 1000
"""Namespaces under a typed prefix that `ls` holds and shows; the rest are counted as read."""
BEGINS_READ = 1000
"""Names read to resolve a typed beginning (`users.al`); more than that, all of them are read."""
SUGGEST_FROM = 10_000
"""Names read to suggest close ones for a namespace that does not exist (bounded)."""


def resolve_namespace(source: MemorySource, typed: str, children: bool = True) -> Resolved:
    """The namespace a user typed: exact; else a namespace prefix (the namespaces under it);
    else a unique beginning of one namespace's text. Unknown: NotFoundError with close ones.
    A whole name costs two index seeks (an item of it, a name under it), never a read of every
    namespace; counts only those under it, where there are any (`children`: grep needs none)."""
    want = parse_namespace(typed)
    if want:
        text = ns_text(want)
        exact = bool(source.items(want, 1))
        under = bool(source.namespace_names(text + ".", 1))
        if not (exact or under):
            want = _beginning(source, text, typed)
            text = ns_text(want)
            exact = bool(source.items(want, 1))
            under = bool(source.namespace_names(text + ".", 1))
        below, more = _under(source, want) if under and children else ([], 0)
        return Resolved(want if exact else None, want, below, more)
    names = source.namespace_names()  # (`()`: the whole store, the empty namespace's items)
    exact_ns = want if want in names else None
    below, more = _under(source, want) if children and len(names) > (exact_ns is not None) else ([], 0)
    return Resolved(exact_ns, want, below, more)


def _under(source: MemorySource, want: Namespace) -> tuple[list[NamespaceInfo], int]:
    """The first CHILDREN_SHOWN namespaces under `want` (not itself), and how many more there
    are (read a batch at a time, counted, never held)."""
    held: list[NamespaceInfo] = []
    more = 0
    for info in source.each_namespace(want):
        if info.namespace == want:
            continue
        if len(held) < CHILDREN_SHOWN:
            held.append(info)
        else:
            more += 1
    return held, more


def _beginning(source: MemorySource, text: str, typed: str) -> Namespace:
    """The one namespace `text` begins (with those under it): `users.al` is users.alice, with
    users.alice.facts under it. Several, or none: NotFoundError."""
    begins = source.namespace_names(text, BEGINS_READ)
    if len(begins) == BEGINS_READ and all(b[: len(begins[0])] == begins[0] for b in begins):
        begins = source.namespace_names(text)  # (maybe one, with more than BEGINS_READ under it)
    if begins and all(b[: len(begins[0])] == begins[0] for b in begins):
        return begins[0]
    if begins:
        shown = ", ".join(ns_text(b) for b in begins[:SUGGESTED]) + (", …" if len(begins) > SUGGESTED else "")
        many = f"{len(begins)}" + ("+" if len(begins) == BEGINS_READ else "")
        raise NotFoundError(f"{typed!r} begins {many} namespaces: {shown}", "type more of it")
    first = text.split(".")[0]
    near = {ns_text(n) for n in source.namespace_names(first[:1], SUGGEST_FROM)}
    near |= {ns_text(n) for n in source.namespace_names("", SUGGEST_FROM)}
    raise NotFoundError(_suggest("namespace", text, sorted(near), source.label))


def resolve_item(source: MemorySource, typed_ns: str, key: str) -> MemoryItem:
    """One item by namespace (typed as `resolve_namespace` takes it) and key (exact, else a
    unique beginning of one); unknown: NotFoundError with close keys."""
    resolved = resolve_namespace(source, typed_ns)
    if resolved.namespace is None:
        raise NotFoundError(
            f"no items in namespace {ns_text(resolved.prefix)!r} itself (in {source.label})",
            "namespaces under it: " + ", ".join(ns_text(c.namespace) for c in resolved.children[:SUGGESTED]),
        )
    ns = resolved.namespace
    found = source.item(ns, key)
    if found is not None:
        return found
    begins = source.keys(ns, key, 2) if key else []
    if len(begins) == 1:
        again = source.item(ns, begins[0])
        if again is not None:
            return again
    if len(begins) > 1:
        raise NotFoundError(f"{key!r} begins several keys in {ns_text(ns)}", "type more of it")
    near = close_ones(key, source.keys(ns, "", 1000))
    raise NotFoundError(f"no key {key!r} in namespace {ns_text(ns)}" + (f"; close: {', '.join(near)}" if near else ""))


# -- the tree -----------------------------------------------------------------------------------
TREE_NODES = 500
"""Labels the tree holds at most (the first ones in namespace order); the namespaces under a
label past it are counted on their shown parent, never held: memory stays flat."""
TREE_CHILDREN = 100
"""Children shown under one label at most (the first ones); the rest are counted."""


@dataclass
class Node:
    """A namespace label in the tree: its own counts and the totals under it."""

    label: str
    namespace: Namespace
    own: NamespaceInfo | None = None
    children: dict[str, Node] = field(default_factory=dict)
    items: int = 0
    bytes: int = 0
    expiring: int = 0
    newest: str | None = None
    namespaces: int = 0
    """Namespaces holding items at this label or under it (shown or not)."""
    hidden: int = 0
    """Namespaces under it that the tree does not hold (past TREE_NODES or TREE_CHILDREN)."""
    hidden_items: int = 0


def tree(infos: Iterable[NamespaceInfo], nodes: int = TREE_NODES, children: int = TREE_CHILDREN) -> Node:
    """The namespaces as a tree of labels, each node with the totals of everything under it,
    read one namespace at a time: at most `nodes` labels held, `children` under one label; the
    namespaces past those are counted on the deepest label shown above them (`hidden`)."""
    root = Node("", ())
    held = 1
    for info in infos:
        node = root
        path = [root]
        for depth, label in enumerate(info.namespace, 1):
            child = node.children.get(label)
            if child is None:
                if len(node.children) >= children or held >= nodes:
                    node.hidden += 1
                    node.hidden_items += info.items
                    break
                child = node.children[label] = Node(label, info.namespace[:depth])
                held += 1
            node = child
            path.append(node)
        else:
            node.own = info
        for n in path:
            n.items += info.items
            n.bytes += info.bytes
            n.expiring += info.expiring
            n.namespaces += 1
            if info.newest and (n.newest is None or info.newest > n.newest):
                n.newest = info.newest
    return root


# -- filters, as LangGraph's search(filter=...) -------------------------------------------------
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def parse_filters(pairs: Iterable[str]) -> dict[str, Any]:
    """`--filter KEY=VALUE`s as LangGraph's filter dict: VALUE is JSON when it parses (a number,
    true, null, an object such as {"$gt": 3}), else text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise StatectlError(
                f"--filter wants KEY=VALUE, not {pair!r}", "e.g. --filter kind=recipe or 'score={\"$gt\": 4}'"
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, dict) and any(k.startswith("$") for k in value):
            bad = [k for k in value if k not in OPERATORS]
            if bad:
                raise StatectlError(
                    f"--filter {key}: unknown operator {bad[0]!r}", f"LangGraph's: {', '.join(OPERATORS)}"
                )
        out[key] = value
    return out


def compare(item_value: Any, wanted: Any) -> bool:
    """Does a stored value match a filter value: LangGraph's `InMemoryStore` comparison (nested
    objects by their keys, lists element-wise, `$` operators as PostgreSQL's JSONB)."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, op, v) for op, v in wanted.items())
        return isinstance(item_value, dict) and all(compare(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(wanted)
            and all(compare(a, b) for a, b in zip(item_value, wanted, strict=False))
        )
    return bool(item_value == wanted)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _operator(value: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(value == wanted)
    if op == "$ne":
        return bool(value != wanted)
    a, b = _number(value), _number(wanted)
    if a is None or b is None:  # (LangGraph raises on a value that is no number; grep skips it)
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches_filter(value: Any, filters: dict[str, Any], sql: bool = False) -> bool:
    """Does a value match every filter key. `sql`: as SqliteStore and PostgresStore match (a
    value without the key matches nothing, `$ne` included: SQL's NULL); else as InMemoryStore
    (a missing key is None, which `$ne` matches)."""
    if not isinstance(value, dict):
        return False
    for k, v in filters.items():
        if k not in value and sql:
            return False
        got = value.get(k)
        if not (got == v if type(v) is str else compare(got, v)):  # (text: plain equality, the common case)
            return False
    return True


SEARCH_NODES = 1_000_000
"""Nodes of one value `grep TEXT` walks at most. Any depth is searched (a walk with its own stack,
never recursion); the bound is for a value that names one subtree many times (a `langgraph
dev` folder's value may share it: its tree, unshared, would be exponential)."""


@dataclass
class Unsearched:
    """Values `grep TEXT` could not search whole (more than SEARCH_NODES nodes), counted: the
    output says so in one line instead of skipping them silently."""

    values: int = 0


def _strings(value: Any) -> Iterator[str]:
    """The keys and leaves of a value as text, at any depth; `_TooLarge` past SEARCH_NODES nodes."""
    stack = [value]
    walked = 0
    while stack:
        node = stack.pop()
        walked += 1
        if walked > SEARCH_NODES:
            raise _TooLarge
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for k, v in node.items():
                yield str(k)
                stack.append(v)
        elif isinstance(node, list | tuple):
            stack.extend(reversed(node))
        elif node is not None:
            yield json.dumps(node) if isinstance(node, bool | int | float) else str(node)


class _TooLarge(Exception):
    """A value with more than SEARCH_NODES nodes (internal to matches_text)."""


def matches_text(item: MemoryItem, text: str, unsearched: Unsearched | None = None) -> bool:
    """Plain text, ignoring case, in the key or anywhere in the value (keys and leaves, at any
    depth); a value larger than SEARCH_NODES nodes is searched that far and counted in
    `unsearched` when the text was not found in that part."""
    low = text.lower()
    if low in item.key.lower():
        return True
    try:
        return any(low in s.lower() for s in _strings(item.value))
    except _TooLarge:
        if unsearched is not None:
            unsearched.values += 1
        return False


def matching(
    source: MemorySource,
    text: str | None,
    filters: dict[str, Any],
    prefix: Namespace = (),
    unsearched: Unsearched | None = None,
) -> Iterator[MemoryItem]:
    """Every item under `prefix` that `grep` keeps, as the scan reads them (the store's order):
    nothing held but a batch. A SQL source narrows the scan by the filters in its query (only
    candidates are decoded); the predicate still decides."""
    for item in source.scan(prefix, filters if source.sql_filters and filters else None):
        if (
            item.error is None
            and matches_filter(item.value, filters, source.sql_filters)
            and (not text or matches_text(item, text, unsearched))
        ):
            yield item


def grep(
    source: MemorySource,
    text: str | None,
    filters: dict[str, Any],
    prefix: Namespace = (),
    limit: int | None = None,
    unsearched: Unsearched | None = None,
) -> list[MemoryItem]:
    """Items under `prefix` whose value matches every filter and contains `text`, in
    (namespace, key) order, at most `limit` (values too large to search whole: `unsearched`)."""
    keep: Callable[[MemoryItem], bool] = lambda i: (  # noqa: E731
        i.error is None
        and matches_filter(i.value, filters, source.sql_filters)
        and (not text or matches_text(i, text, unsearched))
    )
    return source.search(keep, prefix, limit, filters if source.sql_filters and filters else None)


# -- deepagents files ---------------------------------------------------------------------------
def is_file_value(value: Any) -> bool:
    """A value deepagents' `StoreBackend` wrote: `content` (text, or a legacy list of lines) and
    its `encoding` or times."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("content"), str | list)
        and bool({"encoding", "created_at", "modified_at"} & set(value))
    )


def file_text(value: dict) -> str:
    content = value.get("content")
    return "\n".join(str(c) for c in content) if isinstance(content, list) else str(content)


def files_of(items: Iterable[MemoryItem]) -> dict[str, dict] | None:
    """A namespace's items as deepagents' file mapping (path -> file data), when every item is
    a file a StoreBackend wrote (keys are paths); None otherwise."""
    out: dict[str, dict] = {}
    for i in items:
        if not (i.key.startswith("/") and is_file_value(i.value)):
            return None
        out[i.key] = i.value
    return out or None


__all__ = [
    "Node",
    "Resolved",
    "Unsearched",
    "compare",
    "files_of",
    "grep",
    "item_json",
    "matches_filter",
    "matches_text",
    "matching",
    "namespace_json",
    "ns_text",
    "ns_tuple",
    "parse_filters",
    "parse_namespace",
    "resolve_item",
    "resolve_namespace",
    "tree",
]


# -- JSON ---------------------------------------------------------------------------------------
def item_json(item: MemoryItem, value: bool = True) -> dict[str, Any]:
    """An item as `--json` gives it: LangGraph's Item fields, its TTL, size and index fields."""
    out: dict[str, Any] = {
        "namespace": list(item.namespace),
        "key": item.key,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "expires_at": item.expires_at,
        "ttl_minutes": item.ttl_minutes,
        "size": item.size,
    }
    if value:
        out["value"] = item.value
        out["indexed"] = [{"field": f, "dims": d} for f, d in item.vectors]
        if item.error is not None:
            out["error"] = item.error
    else:
        out["preview"] = item.preview
    return out


def namespace_json(info: NamespaceInfo) -> dict[str, Any]:
    return {
        "namespace": list(info.namespace),
        "items": info.items,
        "bytes": info.bytes,
        "newest": info.newest,
        "expiring": info.expiring,
    }


# -- a deepagents thread's files kept in the store ----------------------------------------------
PATHS_CHECKED = 200
"""Paths of a thread's file tool calls looked up in the store (bounded: a long thread)."""
PATH_ARGS = ("file_path", "path")
NAMESPACES_CHECKED = 1_000
"""Namespaces looked at for files (in text order; bounded: a store of millions of namespaces)."""


def tool_paths(messages: Any) -> list[str]:
    """The file paths a thread's tool calls named (deepagents' write_file, edit_file, read_file,
    ls, ...), first seen first, at most PATHS_CHECKED."""
    out: dict[str, None] = {}
    for message in messages if isinstance(messages, list | tuple) else ():
        data = message.get("data", message) if isinstance(message, dict) else None
        calls = data.get("tool_calls") if isinstance(data, dict) else None
        for call in calls if isinstance(calls, list) else ():
            args = call.get("args") if isinstance(call, dict) else None
            for name in PATH_ARGS:
                path = args.get(name) if isinstance(args, dict) else None
                if isinstance(path, str) and path.startswith("/") and not path.endswith("/"):
                    out.setdefault(path, None)
        if len(out) >= PATHS_CHECKED:
            break
    return list(out)[:PATHS_CHECKED]


@dataclass(frozen=True)
class StoreRoute:
    """A path prefix of a thread's filesystem that lives in the store (CompositeBackend's route
    to a StoreBackend): where, and the thread's paths found there."""

    route: str
    namespace: Namespace
    paths: list[str]


def store_routes(source: MemorySource, paths: Iterable[str], in_state: Iterable[str]) -> list[StoreRoute]:
    """The routes under which a thread's paths (not in its `files` state) are files a
    StoreBackend wrote: `/memories/notes.md` is the key `/notes.md` of a namespace holding files
    (a route strips its prefix). Reads only the namespaces whose keys are paths (of the first
    NAMESPACES_CHECKED namespaces), one item a path."""
    state = set(in_state)
    wanted = [p for p in paths if p not in state]
    if not wanted:
        return []
    holding = [ns for ns in source.namespace_names(limit=NAMESPACES_CHECKED) if source.keys(ns, "/", 1)]
    found: dict[tuple[str, Namespace], list[str]] = {}
    for path in wanted:
        cuts = [i for i in range(1, len(path)) if path[i] == "/"]
        for i in cuts:
            route, key = path[: i + 1], path[i:]
            hit = next(
                (ns for ns in holding if (item := source.item(ns, key)) is not None and is_file_value(item.value)),
                None,
            )
            if hit is not None:
                found.setdefault((route, hit), []).append(path)
                break
    return [StoreRoute(route, ns, sorted(p)) for (route, ns), p in sorted(found.items())]
