"""`statectl mcp`: the read-only answers over the Model Context Protocol (the official `mcp` SDK).

Every tool runs in a worker thread, bounded by the tool timeout: a slow source ends the call with
one line, the server goes on. Every failure is a tool error with statectl's one-line message (no
traceback, no secret of the source); results are JSON text with no raw control character.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from statectl import __version__
from statectl.errors import StatectlError
from statectl.mcp import memory_tools, paging, tools
from statectl.mcp.tools import Config

INSTRUCTIONS = """\
statectl reads LangGraph checkpoints (SQLite, Postgres, `langgraph dev` folders, LangGraph servers) \
and answers exactly as LangGraph's get_state / get_state_history would, read-only. Start with \
list_threads (status: done, interrupted, error, pending), then thread_log for a thread's steps \
(which nodes ran, what they changed), show_state for the state at a checkpoint (values, next, \
tasks, interrupts, errors), diff for what a step changed. Checkpoint selectors: an id, a unique \
prefix or suffix, 'latest', or a step number. Results are bounded: follow next_cursor, and use \
pointer (a JSON pointer such as /values/messages/3) to read one part whole. The long-term memory \
store (BaseStore: what outlives a thread) is read with store_namespaces, store_items, store_get, \
store_grep."""

Db = Annotated[
    str | None,
    Field(description="Which store: one list_sources names (its db or index); default: the first."),
]
Thread = Annotated[str, Field(description="A thread id, or a unique prefix of one.")]
Ns = Annotated[str, Field(description="Checkpoint namespace (a subgraph's); '' is the root graph.")]
Cursor = Annotated[str | None, Field(description="next_cursor from the previous result, to page on.")]
Pointer = Annotated[
    str | None,
    Field(description="A JSON pointer into the result (/values/messages/3/content): only that part, whole or paged."),
]
Status = Annotated[str | None, Field(description="done, interrupted, error or pending (several: 'error,interrupted').")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class _Server(MCPServer):
    """The SDK's server, with its argument errors in one line (pydantic's span several), and an
    argument no tool of statectl's takes refused (the SDK drops it: an agent that asked for
    `db_b` would read a diff of one store as the diff of two). Every error text is `said` (redacted,
    one line, bounded), as every result is `sent`."""

    said: Callable[[str], str] = staticmethod(lambda text: text)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from pydantic import ValidationError

        schema = self._tool_input_schema(name)
        takes = (schema or {}).get("properties")
        if isinstance(takes, dict) and (unknown := sorted(set(arguments or {}) - set(takes))):
            raise ToolError(
                self.said(f"bad arguments to {name}: no argument {unknown[0]!r} (it takes: {', '.join(takes)})")
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            said = "; ".join(f"{'.'.join(map(str, e['loc'][-1:])) or 'arguments'}: {e['msg']}" for e in cause.errors())
            raise ToolError(self.said(f"bad arguments to {name}: {said}")) from None


def build(config: Config, timeout: float) -> MCPServer:
    """The server with statectl's tools; `timeout`: the longest one tool call may take."""
    from statectl.settings import current

    settings = current()  # (--timeout, --aes-key, --unpickle-inert: in force in every worker)
    server = _Server(
        "statectl", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", subscriptions=False
    )
    server.said = functools.partial(tools.said, config)

    def tool(fn: Callable[..., dict[str, Any]]) -> Callable[[Callable[..., Any]], Any]:
        return lambda face: _register(server, face, functools.partial(_bounded, fn, config, settings, timeout), config)

    @tool(tools.list_sources)
    def list_sources() -> None:
        """The stores this server reads (the db argument of the other tools), and the graph it knows."""

    @tool(tools.list_threads)
    def list_threads(
        db: Db = None,
        status: Status = None,
        match: Annotated[str | None, Field(description="Only thread ids containing this text.")] = None,
        since: Annotated[str | None, Field(description="Updated since: 30m, 2h, 3d, or a date.")] = None,
        older_than: Annotated[str | None, Field(description="Not updated for this long: 2h, 7d.")] = None,
        meta: Annotated[
            list[str] | None, Field(description="KEY=VALUE the newest checkpoint's metadata holds (all must).")
        ] = None,
        limit: Annotated[int, Field(description="Threads per page (1-1000).")] = 50,
        cursor: Cursor = None,
    ) -> None:
        """Threads, most recently updated first: status, checkpoints, last update, and a preview (the
        error and its node, the pending interrupt's question, else the first user message)."""

    @tool(tools.thread_log)
    def thread_log(
        thread_id: Thread,
        db: Db = None,
        ns: Ns = "",
        node: Annotated[str | None, Field(description="Only the steps where this node ran.")] = None,
        changed: Annotated[str | None, Field(description="Only the steps that changed this state key.")] = None,
        grep: Annotated[str | None, Field(description="Only checkpoints whose state contains this text.")] = None,
        cursor: Cursor = None,
    ) -> None:
        """A thread's history, newest first (as get_state_history): each checkpoint's id, step,
        source, the nodes whose writes made it (ran), the state keys they changed, interrupts and
        errors raised from it."""

    @tool(tools.show_state)
    def show_state(
        thread_id: Thread,
        checkpoint: Annotated[
            str | None, Field(description="Checkpoint id, unique prefix or suffix, 'latest', or step number.")
        ] = None,
        db: Db = None,
        ns: Ns = "",
        key: Annotated[str | None, Field(description="Only this state key.")] = None,
        pointer: Pointer = None,
        cursor: Cursor = None,
    ) -> None:
        """The state at a checkpoint (the newest by default), as get_state gives it: values, next,
        tasks (with their interrupts and errors), metadata, created_at, parent."""

    @tool(tools.diff)
    def diff(
        thread_id: Thread,
        a: Annotated[
            str | None, Field(description="With b: the 'from' checkpoint. Alone: compared with its parent.")
        ] = None,
        b: Annotated[str | None, Field(description="The 'to' checkpoint.")] = None,
        db: Db = None,
        ns: Ns = "",
        key: Annotated[str | None, Field(description="Only this state key.")] = None,
        pointer: Pointer = None,
        cursor: Cursor = None,
    ) -> None:
        """What changed between two checkpoints (default: the newest against its parent), key by
        key, messages by id, and which node wrote each change."""

    @tool(tools.graph)
    def graph(
        thread_id: Annotated[
            str | None, Field(description="The thread whose path to draw (needed when the server has no graph).")
        ] = None,
        db: Db = None,
        ns: Ns = "",
        cursor: Cursor = None,
    ) -> None:
        """The graph as a Mermaid flowchart: the app's own (when the server was started with --graph)
        with the thread's path, or the graph a thread's history shows (inferred, and said so)."""

    @tool(tools.size)
    def size(
        thread_id: Annotated[str | None, Field(description="A thread: its bytes by channel and per step.")] = None,
        db: Db = None,
        limit: Annotated[int, Field(description="Largest threads to list (0: all).")] = 20,
        cursor: Cursor = None,
    ) -> None:
        """Where the bytes go: by table, the largest threads (without thread_id); by channel and per
        step (with it)."""

    @tool(tools.prune_plan)
    def prune_plan(
        keep_last: Annotated[int, Field(description="Keep the N newest checkpoints of each namespace.")] = 0,
        older_than: Annotated[str | None, Field(description="Only checkpoints older than this may go.")] = None,
        thread_id: Annotated[str | None, Field(description="Only this thread (default: every thread).")] = None,
        status: Status = None,
        db: Db = None,
        threads_per_page: Annotated[int, Field(description="Threads planned per call (1-500).")] = 50,
        cursor: Cursor = None,
    ) -> None:
        """What `statectl prune` could delete safely (a plan only: this server never writes). Always
        kept: each namespace's newest checkpoint, branch heads, fork points, delta ancestors."""

    @tool(tools.schema)
    def schema(
        thread_id: Annotated[
            str | None, Field(description="The thread whose state keys to infer (and check against the graph).")
        ] = None,
        db: Db = None,
        ns: Ns = "",
        cursor: Cursor = None,
    ) -> None:
        """A thread's state keys and their types as its history shows them; with the server's
        --graph, the thread's drift from the graph's schema, or (without a thread) every thread the
        schema would break."""

    @tool(tools.stored_types)
    def stored_types(db: Db = None, cursor: Cursor = None) -> None:
        """Every type the stored values name (msgpack ext types, LangChain lc ids, pickled classes),
        with how many values and threads name it, and what LangGraph's strict mode
        (LANGGRAPH_STRICT_MSGPACK=true) does with it; the allowed_msgpack_modules list and the
        JsonPlusSerializer(...) line that make strict mode load every thread. Read-only."""

    _memory_tools(tool)
    return server


Namespace = Annotated[
    str, Field(description="A store namespace, labels joined by '.' (users.alice.memories); a unique beginning works.")
]


def _memory_tools(tool: Callable[..., Any]) -> None:
    """The long-term memory store's tools (memory_tools.py)."""

    @tool(memory_tools.store_namespaces)
    def store_namespaces(
        db: Db = None,
        prefix: Annotated[str | None, Field(description="Only namespaces under this one.")] = None,
        cursor: Cursor = None,
    ) -> None:
        """The long-term memory store's namespaces (as BaseStore.list_namespaces), each with its item
        count, bytes, newest update and items expiring (TTL)."""

    @tool(memory_tools.store_items)
    def store_items(
        namespace: Namespace,
        db: Db = None,
        limit: Annotated[int, Field(description="Items per page (1-1000), in key order.")] = 50,
        after: Annotated[str | None, Field(description="Start after this key (next_after of the last page).")] = None,
        cursor: Cursor = None,
    ) -> None:
        """A namespace's items: key, created, updated, expiry, size and the value's beginning (values are
        not read whole: store_get reads one)."""

    @tool(memory_tools.store_get)
    def store_get(
        namespace: Namespace,
        key: Annotated[str, Field(description="The item's key (a unique beginning works).")],
        db: Db = None,
        pointer: Pointer = None,
        cursor: Cursor = None,
    ) -> None:
        """One store item as BaseStore.get gives it (value, created_at, updated_at) with its expiry and
        the fields indexed for vector search (dimensions only)."""

    @tool(memory_tools.store_grep)
    def store_grep(
        text: Annotated[str | None, Field(description="Plain text, ignoring case, in the key or value.")] = None,
        filter: Annotated[  # noqa: A002 - BaseStore.search's word
            list[str] | None,
            Field(description='KEY=VALUE as BaseStore.search(filter=...) matches (VALUE as JSON: 4.5, {"$gt": 3}).'),
        ] = None,
        namespace: Annotated[str | None, Field(description="Only this namespace and those under it.")] = None,
        db: Db = None,
        limit: Annotated[int, Field(description="At most this many items (1-1000).")] = 50,
        cursor: Cursor = None,
    ) -> None:
        """Store items whose value matches every filter and holds the text, across namespaces. Vector
        similarity (search(query=...)) needs the app's embedding model: not offered."""


def _register(server: MCPServer, face: Callable[..., Any], run: Callable[..., Any], config: Config) -> Any:
    """`face`'s signature and docstring (the schema and description the model sees), run by `run`;
    its result redacted and bounded as sent, whatever the tool did (the one place results leave)."""

    @functools.wraps(face)
    async def call(**kwargs: Any) -> CallToolResult:
        result = tools.redact_result(await run(face.__name__, kwargs), config.redactor)
        return CallToolResult(content=[TextContent(type="text", text=paging.sent(result, config.limit))])

    call.__annotations__ = {**face.__annotations__, "return": CallToolResult}
    return server.tool(name=face.__name__, annotations=READ_ONLY, structured_output=False)(call)


async def _bounded(
    fn: Callable[..., dict[str, Any]], config: Config, settings: Any, timeout: float, name: str, kwargs: dict
) -> dict[str, Any]:
    """The tool in a worker thread, with the server's settings, for at most `timeout` seconds; every
    failure one line."""

    def work() -> dict[str, Any]:
        with settings.applied():
            return fn(config, **kwargs)

    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise ToolError(f"{name} took longer than {timeout:g} s (statectl mcp --tool-timeout)") from None
    except StatectlError as exc:
        raise ToolError(tools.said(config, str(exc))) from None
    except RecursionError:
        raise ToolError("the data nests too deeply to read") from None
    except Exception as exc:  # a bug of statectl's: one line, never the data or a traceback
        raise ToolError(f"internal error: {type(exc).__name__}") from None


def http_app(server: MCPServer, host: str, port: int, token: str | None) -> Any:
    """The streamable-HTTP app behind `statectl.listen.Guard`: Host and Origin this server's own
    (the SDK's own check lets in any port of localhost), and where a token is set, every request
    carries it as a bearer token."""
    from mcp.server.transport_security import TransportSecuritySettings

    from statectl.listen import Guard

    guard = Guard(host, port, token)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # (the guard's, stricter)
    app = server.streamable_http_app(host=host, transport_security=security)

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = [(k.lower(), v.decode("latin-1")) for k, v in scope.get("headers") or []]
            bearer = [v for k, v in headers if k == b"authorization"]
            scheme, _, given = bearer[0].partition(" ") if len(bearer) == 1 else ("", "", "")
            refused = guard.refusal(
                [v for k, v in headers if k == b"host"],
                [v for k, v in headers if k == b"origin"],
                given if scheme.lower() == "bearer" else None,
            )
            if refused is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                status, said = refused
                await send(
                    {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": f"statectl mcp: {said}\n".encode()})
                return
        await app(scope, receive, send)

    return guarded
