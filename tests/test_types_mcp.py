"""`doctor --types` over MCP: the `stored_types` tool, bounded and redacted like the others."""

from __future__ import annotations

import dataclasses
import json
import shutil
from typing import TypedDict

import pytest

pytest.importorskip("mcp")  # (a dev install has it: pyproject's dev extra)

from conftest import one_node_runs
from parity import SAMPLES
from test_mcp import SECRET, call, stdio
from test_types import _types


@dataclasses.dataclass
class Ticket:
    """A dataclass of this test module, in state (its values name `test_types_mcp.Ticket`)."""

    number: int


class TicketState(TypedDict, total=False):
    tickets: list[Ticket]


def _open_ticket(state: TicketState) -> dict:
    return {"tickets": [*state.get("tickets", []), Ticket(len(state.get("tickets", [])) + 1)]}


async def test_mcp_answers_the_types_and_the_allowlist_bounded_and_redacted(run, tmp_path):
    """The MCP tool answers what `doctor --types --json` does; at a small --max-chars the types
    come a page at a time, every one reachable by the cursor; a secret in a thread id is redacted."""
    db = tmp_path / "tickets.sqlite"
    runs = [
        ({"tickets": []}, {"configurable": {"thread_id": f"user-{i}-{SECRET if i == 0 else 'x'}"}}) for i in range(3)
    ]
    one_node_runs(db, TicketState, _open_ticket, runs)
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
    expected = _types(run, str(db))
    async with stdio("--db", str(db), "--db", str(tmp_path / "custom.sqlite"), "--no-redact") as c:
        whole = await call(c, "stored_types")
        assert whole["types"] == expected["types"]
        assert whole["serializer"] == expected["serializer"]
        assert ["test_types_mcp", "Ticket"] in whole["allowed_msgpack_modules"]
        assert whole["next_cursor"] is None
    custom = _types(run, str(tmp_path / "custom.sqlite"))
    async with stdio("--db", str(db), "--db", str(tmp_path / "custom.sqlite"), "--max-chars", "2500") as c:
        shown = await call(c, "stored_types")
        assert SECRET not in json.dumps(shown)
        ticket = next(t for t in shown["types"] if t["name"] == "Ticket")
        assert ticket["threads"] == 3
        assert len(ticket["thread_ids"]) == 3
        pages, cursor = [], None
        while True:
            page = await call(c, "stored_types", db="1", **({"cursor": cursor} if cursor else {}))
            assert len(json.dumps(page)) <= 2500
            pages += page["types"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert [(t["module"], t["name"], t["values"]) for t in pages] == [
            (t["module"], t["name"], t["values"]) for t in custom["types"]
        ]
        assert page["serializer"] == custom["serializer"]
