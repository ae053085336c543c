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
    where = tmp_path_factory.mktemp("iso") / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    py = where / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
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
