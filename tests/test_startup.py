"""What a command imports is what it uses: `statectl threads`, `log` and `show` are the commands
people run most, and every module they load is paid at every start (issue 55: the whole time of
`threads`/`log`/`show` against the import-only floor of Typer and Rich). Which modules get
imported is asserted here, never how long anything takes (bench/bench.py and `farm-bench` time)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from parity import DBS

ONLY_SIZE = ("statectl.sizes",)
"""`statectl size`'s classes: no other command of these loads them."""
NO_THREAD_READ = ("statectl.core.state", "statectl.core.graphspec", "xxhash")
"""The read model of one thread: `threads` lists threads from SQL and metadata, and names the node
that raised from the write alone (`core.tasks`), so a store whose threads ended in errors does not
load it either."""

ONLY_GRAPH = ("statectl.core.graphspec",)
"""A graph's spec (`--graph`): a view of the data alone does not load it."""
ONLY_LOG = ("statectl.core.timeline", "statectl.core.steps")
"""`log`'s lines: `show` does not load them (what came after a checkpoint: core.afterwards)."""
RICH_LAYOUT = ("rich.console", "rich.text", "rich.style", "rich.segment")
"""Rich's layout: `threads`, `log` (its table and `--oneline`) and `show` into a pipe or a file
write their lines without it (render/pipe.py, render/pipe_show.py), nor do they load the modules
that lay out through it."""
RICH_RENDER = (
    "statectl.render.tables",
    "statectl.render.columns",
    "statectl.render.safe",
    "statectl.render.state",
    "statectl.render.values",
    "statectl.render.grid",
    "statectl.render.plain",
)
"""statectl's renderers that lay out through Rich."""


def _loaded(db: str, *args: str) -> set[str]:
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main({[*args, '--db', db]!r})\nexcept SystemExit:\n    pass\n"
        "print('LOADED', ' '.join(sorted(sys.modules)))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("LOADED "), proc.stdout[-500:] + proc.stderr
    return set(last.split()[1:])


def _thread(db: str) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT thread_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchone()[0]


@pytest.mark.parametrize("name", DBS)
def test_the_common_commands_load_only_what_they_use(dbs, name):
    db = str(dbs[name])
    thread = _thread(db)
    for args in (
        ["threads"],
        ["threads", "--json"],
        ["log", thread],
        ["log", thread, "--oneline"],
        ["log", thread, "--json"],
        ["show", thread],
        ["show", thread, "--json"],
    ):
        loaded = _loaded(db, *args)
        assert "statectl.store" in loaded, args  # (the test sees the command run)
        assert not loaded & set(ONLY_SIZE), args
        assert not loaded & set(ONLY_GRAPH), args
        if args[0] == "show":
            assert not loaded & set(ONLY_LOG), args
        rich = loaded & {*RICH_LAYOUT, *RICH_RENDER}  # (stdout is a pipe here)
        assert not rich, (args, rich)
        if args[0] == "threads" and name in ("agent", "deep", "interrupts"):
            assert not loaded & set(NO_THREAD_READ), args
    assert set(ONLY_SIZE) <= _loaded(db, "size")  # (what the test looks for is what `size` loads)


def test_import_statectl_loads_no_model_until_asked():
    """`import statectl` (every command's modules are in the package) loads none of the names it
    re-exports until one is used; `statectl.Store` is the store module's, `statectl.open` opens one."""
    code = (
        "import sys, statectl\n"
        "before = sorted(m for m in ('statectl.model', 'statectl.store', 'statectl.errors') if m in sys.modules)\n"
        "from statectl.store import Store\n"
        "print(before, statectl.Store is Store, type(statectl.open('sample_threads/agent.sqlite')).__name__, "
        "statectl.Snapshot.__module__)"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root)
    assert proc.stdout.split() == ["[]", "True", "Store", "statectl.model"], proc.stderr


def test_ctrl_c_while_the_modules_load_is_exit_130_without_a_traceback():
    """The `statectl` script imports `statectl.cli` and calls `main`: Ctrl+C in the first tenths
    of a second (Typer, Rich and statectl's modules loading) ended in a Python traceback. The
    interrupt is raised here, deterministically, by the import of Typer itself."""
    code = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from statectl.cli import main\n"
        "main(['threads', '--db', 'nothing.sqlite'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
