"""statectl installed on its own (as pipx or `uv tool` install it): no LangGraph in its
environment, so `schema TARGET` and `graph TARGET` load the graph in the project's interpreter
(`--python`, the active virtualenv, or ./.venv) and read the result as JSON. The test installs
statectl into a fresh venv (its runtime dependencies from the index) and uses the suite's own
venv, which has the sample apps' dependencies, as the project's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PY = Path(sys.executable)  # the suite's venv: langgraph, langchain, the sample apps' deps
TARGET = str(ROOT / "sample_threads" / "agent_app.py") + ":agent"

# Every test here installs statectl from this source tree, whose build/ folder pip shares: on two
# workers at once, one build found the other's files ("[Errno 17] File exists"). One worker runs them.
pytestmark = pytest.mark.xdist_group("isolated-install")


@pytest.fixture(scope="module")
def isolated(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("iso") / "pipx" / "venvs" / "statectl"  # (where pipx puts it)
    venv.EnvBuilder(with_pip=True).create(where)
    py = where / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{ROOT}[mcp]"],
        check=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PIP_REQUIRE_VIRTUALENV"},
    )
    return where


def _statectl(iso: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return subprocess.run(
        [str(iso / "bin" / "statectl"), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **(env or {})},
        timeout=300,
    )


def test_the_install_brings_no_langgraph(isolated):
    py = str(isolated / "bin" / "python")
    assert subprocess.run([py, "-c", "import langgraph"], capture_output=True).returncode != 0
    requires = json.loads(
        subprocess.run(
            [py, "-c", "import importlib.metadata as m, json; print(json.dumps(m.requires('statectl')))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    runtime = [r for r in requires if "extra ==" not in r]  # what `pip install statectl` brings
    assert runtime, runtime
    assert not [r for r in runtime if r.startswith(("langgraph", "langchain"))], runtime


def test_database_commands_work_without_langgraph(isolated, tmp_path):
    r = _statectl(isolated, "log", "bakery-plan", "--db", str(ROOT / "sample_threads" / "agent.sqlite"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("thread bakery-plan"), r.stderr


def test_a_missing_extra_says_the_line_for_how_statectl_was_installed(isolated, tmp_path):
    """statectl is not on PyPI: `pip install 'statectl[web]'` finds nothing. Installed with pipx
    from a clone, the hint is pipx's, from that folder (or the packages to inject)."""
    r = _statectl(isolated, "tui", "--web", "--db", str(ROOT / "sample_threads" / "agent.sqlite"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert f"pipx install --force '{ROOT}[web]' (or: pipx inject statectl 'textual-serve" in r.stderr


def test_without_a_project_interpreter_it_says_what_to_do(isolated, tmp_path):
    r = _statectl(isolated, "schema", TARGET, cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1
    assert "needs LangGraph" in r.stderr
    assert "--python" in r.stderr


def test_schema_and_graph_in_the_projects_interpreter(isolated, tmp_path, run):
    want_schema = json.loads(run("schema", TARGET, "--json").out)
    want_graph = run(
        "graph", TARGET, "--db", str(ROOT / "sample_threads" / "agent.sqlite"), "--thread", "investor-email"
    ).out
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".venv").symlink_to(PROJECT_PY.parent.parent)
    for how, cwd, env in (
        (["--python", str(PROJECT_PY)], tmp_path, None),  # named
        ([], tmp_path, {"VIRTUAL_ENV": str(PROJECT_PY.parent.parent)}),  # active venv
        ([], tmp_path / "proj", None),
    ):  # ./.venv
        r = _statectl(isolated, "schema", TARGET, "--json", *how, cwd=cwd, env=env)
        assert r.returncode == 0, (how, r.stderr)
        assert json.loads(r.stdout) == want_schema, how
        g = _statectl(
            isolated,
            "graph",
            TARGET,
            "--db",
            str(ROOT / "sample_threads" / "agent.sqlite"),
            "--thread",
            "investor-email",
            *how,
            cwd=cwd,
            env=env,
        )
        assert g.returncode == 0, (how, g.stderr)
        assert g.stdout == want_graph, (how, g.stderr)
    # `--graph` loads the same way: the snapshot is the one statectl with LangGraph gives
    interrupts = str(ROOT / "sample_threads" / "interrupts.sqlite")
    subgraph = str(ROOT / "sample_threads" / "interrupts_app.py:subgraph_builder")
    want = run("show", "subgraph-waiting", "0", "--json", "--db", interrupts, "--graph", subgraph).out
    assert '"log":[]' in want
    r = _statectl(
        isolated,
        "show",
        "subgraph-waiting",
        "0",
        "--json",
        "--db",
        interrupts,
        "--graph",
        subgraph,
        "--python",
        str(PROJECT_PY),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == want, r.stderr
    bad = _statectl(
        isolated,
        "schema",
        str(ROOT / "sample_threads" / "agent_app.py") + ":nope",
        "--python",
        str(PROJECT_PY),
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "has no attribute 'nope'" in bad.stderr


TYPERS = ("0.16.1", "0.29.2")
"""Typers a project may hold: one on click, one that vendors click and parses with pydantic
(statectl once pinned typer<0.20 and downgraded the second)."""


@pytest.fixture(scope="module", params=TYPERS)
def project_venv(request, tmp_path_factory) -> tuple[Path, str]:
    """A project's venv that already has its own Typer, into which statectl is installed."""
    where = tmp_path_factory.mktemp("proj") / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    py = str(where / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PIP_REQUIRE_VIRTUALENV"}
    for what in ([f"typer=={request.param}"], [str(ROOT)]):
        subprocess.run(
            [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *what],
            check=True,
            timeout=600,
            env=env,
        )
    return where, request.param


def test_installing_into_a_project_keeps_its_typer(project_venv, tmp_path):
    """statectl asks for any Typer from 0.13 on: a project's own is kept, not up- or downgraded,
    and the CLI behaves the same on it (help, usage errors, completion)."""
    project_venv, typer_version = project_venv
    py = str(project_venv / "bin" / "python")
    version = subprocess.run(
        [py, "-c", "import importlib.metadata as m; print(m.version('typer'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == typer_version
    db = str(ROOT / "sample_threads" / "agent.sqlite")
    r = _statectl(project_venv, "threads", "--db", db, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("4 threads in"), r.stderr
    help_text = _statectl(project_venv, "show", "-h", cwd=tmp_path).stdout
    assert "The thread's id, or a unique prefix of it." in help_text
    assert "\\[" not in help_text
    for args, code in (
        (["threads", "--sort", "bogus"], 2),
        (["log", "bakery-plan", "-n", "x"], 2),
        (["show", "nope"], 3),
    ):
        bad = _statectl(project_venv, *args, "--db", db, cwd=tmp_path)
        assert bad.returncode == code, (args, bad.stderr)
        assert len(bad.stderr.splitlines()) == 1, (args, bad.stderr)
    script = _statectl(project_venv, cwd=tmp_path, env={"_STATECTL_COMPLETE": "source_bash"}).stdout
    assert "_statectl_completion()" in script


# --- as a new user has it: statectl installed alone (pipx), the project's .venv without it ------

APP = """\
# A new user's app: a chat on SqliteSaver with an interrupt and a node that fails.

import operator
import sqlite3
import sys
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.types import Command, interrupt


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    drink: str
    counter: int
    log: Annotated[list[str], operator.add]


def take_order(state: State):
    drink = state["messages"][-1].content.split()[-1]
    return {"drink": drink, "counter": state.get("counter", 0) + 1, "log": [f"order {drink}"]}


def confirm(state: State):
    answer = interrupt({"question": f"One {state['drink']}, confirm?"})
    return {"messages": [AIMessage(f"you said {answer}")], "log": ["confirmed"]}


def place_order(state: State):
    if state["drink"] == "bomb":
        raise ValueError("no such drink: bomb")
    return {"messages": [AIMessage(f"one {state['drink']} coming")], "log": ["placed"]}


builder = StateGraph(State)
builder.add_node("take_order", take_order)
builder.add_node("confirm", confirm)
builder.add_node("place_order", place_order)
builder.add_edge(START, "take_order")
builder.add_edge("take_order", "confirm")
builder.add_edge("confirm", "place_order")
builder.add_edge("place_order", END)
graph = builder.compile()

if __name__ == "__main__":
    saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
    app = builder.compile(checkpointer=saver)
    orders = (("order-coffee", "coffee", "yes"), ("order-tea", "tea", None), ("order-bomb", "bomb", "yes"))
    for thread, drink, answer in orders:
        config = {"configurable": {"thread_id": thread}}
        app.invoke({"messages": [HumanMessage(f"I would like a {drink}")]}, config)
        if answer is not None:
            try:
                app.invoke(Command(resume=answer), config)
            except ValueError:
                pass
    saver.conn.close()
"""
"""The SqliteSaver chat of issue 53: order-coffee done, order-tea waiting at an interrupt,
order-bomb failed in place_order."""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's project folder: app.py, a .venv with LangGraph and WITHOUT statectl (a plain venv:
    no system site-packages through which the suite's statectl could leak), and the
    checkpoints.sqlite a real run of app.py wrote with it."""
    where = tmp_path_factory.mktemp("newuser")
    venv.EnvBuilder(with_pip=True).create(where / ".venv")
    py = str(where / ".venv" / "bin" / "python")
    pip = subprocess.run(
        [py, "-m", "pip", "install", "--quiet", "langgraph==1.2.22", "langgraph-checkpoint-sqlite==3.1.2"],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k not in ("PIP_REQUIRE_VIRTUALENV", "PYTHONPATH")},
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    (where / "app.py").write_text(APP)
    clean = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    subprocess.run([py, "app.py", "checkpoints.sqlite"], cwd=where, check=True, env=clean, timeout=120)
    lacks = subprocess.run([py, "-c", "import statectl"], capture_output=True, text=True, cwd="/", env=clean)
    assert "No module named 'statectl'" in lacks.stderr
    return where


def _dev(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """statectl installed in the project (the suite's venv: it has LangGraph): what to expect."""
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    return subprocess.run(
        [sys.executable, "-m", "statectl", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
        timeout=300,
    )


HOWS = ([], ["--python", ".venv/bin/python"])
"""The project's interpreter found by statectl (./.venv) and named (`--python`, as the README says)."""

GRAPHED = (
    ("schema", "app.py:graph", "--json"),
    ("schema", "app.py:graph", "--all-threads", "--db", "checkpoints.sqlite"),
    ("graph", "app.py:graph"),
    ("graph", "app.py:graph", "--db", "checkpoints.sqlite", "--thread", "order-coffee", "--json"),
    ("doctor", "--db", "checkpoints.sqlite", "--graph", "app.py:graph"),
    ("log", "order-bomb", "--db", "checkpoints.sqlite", "--graph", "app.py:graph"),
    ("show", "order-tea", "--db", "checkpoints.sqlite", "--graph", "app.py:graph", "--json"),
)
"""Every read command that takes a graph target (tui and mcp: below; fork and replay: after)."""


@pytest.mark.parametrize("how", HOWS, ids=["dot-venv", "python"])
def test_every_graph_command_loads_the_graph_in_a_project_without_statectl(isolated, project, how):
    for args in GRAPHED:
        want = _dev(*args, cwd=project)
        assert want.returncode == 0, (args, want.stderr)
        got = _statectl(isolated, *args, *how, cwd=project, env={"COLUMNS": "200"})
        assert got.returncode == 0, (args, how, got.stderr)
        assert got.stdout == want.stdout, (args, how)


@pytest.mark.parametrize("how", HOWS, ids=["dot-venv", "python"])
def test_fork_and_replay_in_a_project_without_statectl(isolated, project, tmp_path, how):
    scratch = str(tmp_path / "scratch.sqlite")
    graph = ("--graph", "app.py:graph", *how)
    fork = _statectl(
        isolated,
        "fork",
        "order-tea",
        "--db",
        "checkpoints.sqlite",
        "--to",
        scratch,
        *graph,
        "--set",
        'drink="latte"',
        "--as-node",
        "confirm",
        cwd=project,
    )
    assert fork.returncode == 0, fork.stderr
    assert "forked thread order-tea" in fork.stdout
    again = _statectl(isolated, "replay", "order-tea", "--db", scratch, "--in-place", "--yes", *graph, cwd=project)
    assert again.returncode == 0, again.stderr
    assert "the new branch of thread order-tea" in again.stdout
    assert "is done" in again.stdout
    shown = json.loads(_statectl(isolated, "show", "order-tea", "--db", scratch, "--json", cwd=project).stdout)
    assert shown["values"]["drink"] == "latte"
    assert shown["values"]["log"][-1] == "placed"


def _in_a_terminal(argv: list[str], cwd: Path, want: str, timeout: float = 120) -> tuple[int, str]:
    """`argv` on a pseudo-terminal (120x40) until `want` is on its screen, then `q`: its exit
    code and what it drew (bounded: killed after `timeout`)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "COLUMNS", "LINES")}
    proc = subprocess.Popen(
        argv, stdin=child_fd, stdout=child_fd, stderr=child_fd, cwd=cwd, env={**env, "TERM": "xterm-256color"}
    )
    os.close(child_fd)
    seen, sent = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sent and want.encode() in seen:
                os.write(main_fd, b"q")
                sent = True
            ready, _, _ = select.select([main_fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(main_fd, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=30) if sent else -1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main_fd)
    return code, seen.decode("utf-8", "replace")


@pytest.mark.parametrize("how", HOWS, ids=["dot-venv", "python"])
def test_tui_with_the_graph_in_a_project_without_statectl(isolated, project, how):
    argv = [str(isolated / "bin" / "statectl"), "tui", "order-bomb", "--db", "checkpoints.sqlite"]
    code, screen = _in_a_terminal([*argv, "--graph", "app.py:graph", *how], project, "place_order")
    assert code == 0, screen[-2000:]
    assert "failed" not in screen
    assert "statectl:" not in screen


@pytest.mark.parametrize("how", HOWS, ids=["dot-venv", "python"])
async def test_mcp_with_the_graph_in_a_project_without_statectl(isolated, project, how):
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    params = StdioServerParameters(
        command=str(isolated / "bin" / "statectl"),
        args=["mcp", "--db", "checkpoints.sqlite", "--graph", "app.py:graph", "--no-redact", *how],
        cwd=str(project),
        env=env,
    )
    async with Client(params, read_timeout_seconds=120) as client:
        got = await client.call_tool("schema", {"thread_id": "order-tea"})
        assert not got.is_error, got.content[0].text
        assert '"graph":"app.py:graph"' in got.content[0].text.replace(" ", "")
        drawn = await client.call_tool("graph", {"thread_id": "order-bomb"})
        assert not drawn.is_error, drawn.content[0].text
        assert "place_order" in drawn.content[0].text
