"""`statectl mcp`'s tool schemas are declared once: each tool's parameters (names, types, defaults,
descriptions) and its description are those of its function in mcp/tools.py or mcp/memory_tools.py,
and the server (mcp/server.py) declares none of its own."""

from __future__ import annotations

import ast
import asyncio
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")  # (a dev install has it: pyproject's dev extra)

from pydantic.fields import FieldInfo

from statectl.mcp import memory_tools, server, tools
from statectl.mcp.tools import Config

ROOT = Path(__file__).resolve().parent.parent


def _listed() -> dict[str, Any]:
    built = server.build(Config(dbs=["agent.sqlite"], labels=["agent.sqlite"]), 5)
    return {t.name: t for t in asyncio.run(built.list_tools())}


def _described(annotation: Any) -> str | None:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, FieldInfo):
            return meta.description
    return None


def test_every_tool_function_is_served_and_every_served_tool_is_one() -> None:
    """A public function of tools.py/memory_tools.py that takes the server's `config` first and
    says what it does (a docstring) is a tool, listed; the helpers (no docstring or private) are not."""
    helpers = {"finish", "named", "said", "opened", "opened_memory", "result_part"}
    public = [
        name
        for module in (tools, memory_tools)
        for name, fn in vars(module).items()
        if inspect.isfunction(fn)
        and fn.__module__ == module.__name__
        and not name.startswith("_")
        and name not in helpers
        and list(inspect.signature(fn).parameters)[:1] == ["config"]
    ]
    assert list(_listed()) == [fn.__name__ for fn in server.TOOLS] == public


@pytest.mark.parametrize("fn", server.TOOLS, ids=lambda fn: fn.__name__)
def test_listed_schema_is_the_function_signature(fn: Any) -> None:
    """What a client lists for a tool is its function's signature (less `config`): the same
    parameters in the same order, required where the function has no default, each default and
    description the function's, and the tool's description the function's docstring."""
    tool = _listed()[fn.__name__]
    hints = typing.get_type_hints(fn, include_extras=True)
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "config"]
    schema = tool.input_schema
    assert list(schema["properties"]) == [p.name for p in params]
    assert sorted(schema.get("required", [])) == sorted(p.name for p in params if p.default is inspect.Parameter.empty)
    for p in params:
        listed = schema["properties"][p.name]
        description = _described(hints[p.name])
        assert description, f"{fn.__name__}({p.name}): no Field(description=...) on the function"
        assert listed["description"] == description
        if p.default is not inspect.Parameter.empty:
            assert listed["default"] == p.default
    assert tool.description == inspect.cleandoc(fn.__doc__ or "")
    assert tool.description
    assert "\n " not in tool.description


def test_the_server_declares_no_parameter_of_its_own() -> None:
    """mcp/server.py names no `Annotated`/`Field` and defines no function shaped like a tool: a
    parameter declared there would be a second declaration, free to drift from the tool's."""
    source = (ROOT / "statectl" / "mcp" / "server.py").read_text()
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }
    assert "Annotated" not in names
    assert "Field" not in names
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    assert not defined & {fn.__name__ for fn in server.TOOLS}
