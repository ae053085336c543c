"""One selection of threads (`core/listing.py` `Selection`) behind `statectl threads`, MCP's
`list_threads` and the TUI's threads screen: the same filters list the same threads, with the same
previews, and no front end selects threads its own way."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from statectl.core.listing import Selection
from statectl.errors import StatectlError

ROOT = Path(__file__).resolve().parent.parent
FILTERS = [
    {},
    {"status": "done"},
    {"status": "error,interrupted"},
    {"match": "A"},
    {"since": "3650d"},
    {"older_than": "1m"},
    {"meta": ["source=loop"]},
]


def _flags(given: dict) -> list[str]:
    flags = []
    for name, value in given.items():
        for one in value if isinstance(value, list) else [value]:
            flags += [f"--{name.replace('_', '-')}", one]
    return flags


@pytest.mark.parametrize("name", ["agent", "flow", "deep"])
@pytest.mark.parametrize("given", FILTERS, ids=lambda g: ",".join(g) or "all")
def test_cli_mcp_and_tui_list_the_same_threads(run, dbs, name, given) -> None:
    pytest.importorskip("pydantic")
    from statectl.mcp import tools
    from statectl.store import open as open_store

    db = str(dbs[name])
    cli = run("threads", "--db", db, "--json", *_flags(given))
    assert cli.code == 0, cli.err
    listed = json.loads(cli.out)
    config = tools.Config(dbs=[db], labels=[db])
    served = tools.list_threads(config, limit=1000, **given)["threads"]
    assert [t["thread_id"] for t in served] == [t["thread_id"] for t in listed]
    assert [t.get("preview") for t in served] == [t.get("preview") for t in listed]
    with open_store(db) as store:
        rows, shown = Selection.parse(**given).page(store)
        assert [t.thread_id for t in rows] == [t["thread_id"] for t in listed]
        assert [{**t.to_json(), **shown[t.thread_id].to_json()} for t in rows] == listed
        if not given:
            from statectl.tui.early import threads_page

            page, previews = threads_page(store, 1000)
            assert [t.thread_id for t in page] == [t["thread_id"] for t in listed]
            assert previews == shown


@pytest.mark.parametrize(
    ("given", "said"),
    [({"status": "done,nosuch"}, "nosuch"), ({"since": "yesterdayish"}, "yesterdayish"), ({"sort": "size"}, "size")],
)
def test_a_bad_filter_is_one_error_whoever_asks(given, said) -> None:
    with pytest.raises(StatectlError, match=said):
        Selection.parse(**given)


@pytest.mark.parametrize(
    ("path", "function"),
    [
        ("cli/threads.py", None),
        ("mcp/tools.py", "list_threads"),
        ("tui/early.py", None),
        ("tui/screens/threads.py", None),
    ],
)
def test_no_front_end_selects_threads_its_own_way(path, function) -> None:
    """The front ends parse no filter and call no store listing themselves: `Selection` does."""
    tree: ast.AST = ast.parse((ROOT / "statectl" / path).read_text())
    if function is not None:
        tree = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    called = {
        n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
    }
    assert not called & {"parse_statuses", "thread_filter", "previews", "stream_threads"}
    threads_calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "threads"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "store"
    ]
    assert not threads_calls
