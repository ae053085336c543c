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
from test_mcp import ROOT, SECRET, call, stdio
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
    expected = _types(run, str(db), cwd=ROOT)
    async with stdio("--db", str(db), "--db", str(tmp_path / "custom.sqlite"), "--no-redact") as c:
        whole = await call(c, "stored_types")
        assert whole["types"] == expected["types"]
        assert whole["serializer"] == expected["serializer"]
        # (the server runs from the project's root, where this test module does not import: missing)
        assert next(t for t in whole["types"] if t["name"] == "Ticket")["verdict"] == "missing"
        assert whole["next_cursor"] is None
    custom = _types(run, str(tmp_path / "custom.sqlite"), cwd=ROOT)
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


async def test_a_hostile_store_lists_its_names_and_allows_none_of_them(hostile_db):
    """Hand-written payloads naming os.system, subprocess.run, `this`, `antigravity` (ext 0-5):
    the tool (and the CLI) reads them as names only: nothing is imported or run, no raw control
    character is sent, and none that runs code is in the allowlist."""
    import subprocess
    import sys

    db, marker = hostile_db
    async with stdio("--db", str(db), "--no-redact") as c:
        found = await call(c, "stored_types")
    verdicts = {f"{t['module']}.{t['name']}": t["verdict"] for t in found["types"]}
    assert verdicts["os.system"] == "runs-code"
    assert verdicts["subprocess.run"] == "runs-code"
    assert verdicts["subprocess.Popen"] == "runs-code"
    listed = {".".join(p) for p in found["allowed_msgpack_modules"]}
    assert not listed & {"os.system", "subprocess.run", "subprocess.Popen"}
    assert not marker.exists()
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main(['doctor', '--types', '--db', {str(db)!r}])\nexcept SystemExit:\n    pass\n"
        # (subprocess: statectl's own, to ask the project's interpreter; never a module the data names)
        "print('LOADED', sorted(m for m in ('this', 'antigravity', 'numpy') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "LOADED []", proc.stdout[-500:] + proc.stderr
    assert not marker.exists()
