"""`statectl mcp`: the read-only answers over the Model Context Protocol (the official `mcp` SDK).

Every tool runs in a worker thread, bounded by the tool timeout: a slow source ends the call with
one line, the server goes on. Every failure is a tool error with statectl's one-line message (no
traceback, no secret of the source); results are JSON text with no raw control character.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

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

    for fn in TOOLS:
        _register(server, fn, functools.partial(_bounded, fn, config, settings, timeout), config)
    return server


TOOLS: tuple[Callable[..., dict[str, Any]], ...] = (
    tools.list_sources,
    tools.list_threads,
    tools.thread_log,
    tools.show_state,
    tools.diff,
    tools.graph,
    tools.size,
    tools.prune_plan,
    tools.schema,
    tools.stored_types,
    memory_tools.store_namespaces,
    memory_tools.store_items,
    memory_tools.store_get,
    memory_tools.store_grep,
)
"""Every tool, in the order a client lists them: each declares its parameters (with their
descriptions) and its description (its docstring) once, in tools.py or memory_tools.py."""


def face(fn: Callable[..., Any]) -> inspect.Signature:
    """The parameters a client sees of tool `fn`: its own, less `config` (the server's), with
    their `Annotated` types resolved (the schema's types and descriptions)."""
    hints = typing.get_type_hints(fn, include_extras=True)
    given = [p.replace(annotation=hints[p.name]) for p in inspect.signature(fn).parameters.values()]
    return inspect.Signature([p for p in given if p.name != "config"], return_annotation=CallToolResult)


def _register(server: MCPServer, fn: Callable[..., Any], run: Callable[..., Any], config: Config) -> Any:
    """Tool `fn` with its `face` and docstring (the schema and description the model sees), run by
    `run`; its result redacted and bounded as sent, whatever the tool did (the one place results
    leave)."""
    name = fn.__name__

    async def call(**kwargs: Any) -> CallToolResult:
        result = tools.redact_result(await run(name, kwargs), config.redactor)
        return CallToolResult(content=[TextContent(type="text", text=paging.sent(result, config.limit))])

    signature = face(fn)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = inspect.cleandoc(fn.__doc__ or "")
    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {"return": CallToolResult}
    return server.tool(name=name, description=call.__doc__, annotations=READ_ONLY, structured_output=False)(call)


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
