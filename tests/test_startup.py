"""What a command imports is what it uses: `statectl threads`, `log` and `show` are the commands
people run most, and every module they load is paid at every start (issue 55: the whole time of
`threads`/`log`/`show` against the import-only floor of Typer and Rich). Which modules get
imported is asserted here, never how long anything takes (bench/bench.py and `farm-bench` time)."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import os
import pickle
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
NO_BYTES_OUT = ("base64",)
"""`threads` and `log` write no value's bytes out (codec.values imports base64 where it encodes)."""
LARGE_BLOBS = ("statectl.codec.arrays",)
"""Lists walked in their bytes (a payload of 32 KB or more, a transcript): `threads` reads none
where it reads no thread's state."""
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
        if args[0] in ("threads", "log"):
            assert not loaded & set(NO_BYTES_OUT), args
        if args[0] == "threads" and name in ("agent", "deep", "interrupts"):
            assert not loaded & set(NO_THREAD_READ), args
            assert not loaded & set(LARGE_BLOBS), args
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


def _reference(cls: type) -> type:
    """`cls` as `@dataclass(frozen=True, slots=True)` would make it from the same fields."""
    specs = [
        (f.name, f.type, dataclasses.field(default=f.default, compare=f.compare, repr=f.repr))
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


def _records(db: Path) -> list:
    """Every kind of record, read from a store LangGraph wrote (threads, rows, writes, snapshots
    with their tasks and interrupts), and the settings and filters a command builds."""
    import statectl
    from statectl.core.listing import Selection
    from statectl.render.pipe import Col
    from statectl.settings import Settings

    store = statectl.open(str(db))
    out: list = [Settings(), Settings(api_key="k", timeout=5.0), Col("thread"), Col("when", "text", right=True)]
    out += [Selection(), Selection.parse("a", "done,error", "2h", None, None, ["k=v"], "node", "recent")]
    out.append(out[-1].where)
    for summary in store.threads(None, None):
        out.append(summary)
        for snap in store.history(summary.thread_id)[:3]:
            out += [snap, *snap.tasks, *snap.interrupts, *(i for t in snap.tasks for i in t.interrupts)]
        rows = store.source.checkpoints(summary.thread_id)  # (SQLite: LazyCheckpointRecords)
        out += [*rows[:2], *store.source.first_checkpoints([summary.thread_id]).values()]
        assert all(isinstance(row.metadata, dict) for row in rows[:2])  # (read before the store closes)
        for row in rows[:4]:
            out += store.source.writes(row.thread_id, row.checkpoint_ns, row.checkpoint_id)[:2]
    store.close()
    return out


@pytest.mark.parametrize("name", ["agent", "interrupts", "deep"])
def test_records_behave_as_frozen_dataclasses_with_slots(dbs, name):
    """The records are made by `model.record` (no method compiled at import): each behaves as the
    `@dataclass(frozen=True, slots=True)` of its fields does: repr, equality, hash, no assignment,
    copies and pickles, `dataclasses.replace`, and its `__init__` takes the fields' defaults."""
    records = _records(dbs[name])
    kinds = {type(r).__name__ for r in records}
    assert {"ThreadSummary", "Snapshot", "Task", "CheckpointRecord", "WriteRecord", "Settings"} <= kinds, kinds
    if name == "interrupts":
        assert "Interrupt" in kinds
    for rec in records:
        cls = next(c for c in type(rec).__mro__ if "__dataclass_fields__" in vars(c))  # (LazyCheckpointRecord)
        ref = _reference(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        same = ref(**{n: getattr(rec, n) for n in names})
        assert repr(rec).removeprefix(type(rec).__qualname__) == repr(same).removeprefix(cls.__name__)
        assert cls.__match_args__ == ref.__match_args__
        assert cls.__slots__ == ref.__slots__
        params = inspect.signature(cls).parameters
        assert [(p.name, p.default) for p in params.values()] == [
            (p.name, p.default) for p in inspect.signature(ref).parameters.values()
        ], cls
        twin = dataclasses.replace(rec)
        assert twin == rec
        assert twin is not rec
        assert copy.copy(rec) == rec
        assert pickle.loads(pickle.dumps(rec)) == rec
        assert rec != same  # (another class: never equal, as between two dataclasses)
        try:
            hash(same)
        except TypeError:
            with pytest.raises(TypeError):
                hash(rec)
        else:
            assert hash(rec) == hash(twin)
        for n in names:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(rec, n, None)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(rec, n)
        compared = [f.name for f in dataclasses.fields(cls) if f.compare]
        for n in compared:
            other = dataclasses.replace(rec, **{n: object()})
            assert type(other) is type(rec)
            assert (other == rec) is False
            assert (ref(**{m: getattr(other, m) for m in names}) == same) is False


def test_the_common_commands_compile_no_method_at_import(dbs):
    """A dataclass compiles its `__init__`, `__eq__`, `__repr__`, `__hash__` and, frozen,
    `__setattr__` and `__delattr__` from source text at import (~1 ms a class): on the common
    commands' path statectl's classes are `model.record`s, whose methods are in the .pyc."""
    db = str(dbs["agent"])
    thread = _thread(db)
    code = (
        "import sys\nfrom statectl.cli import main\n"
        "for args in {args!r}:\n"
        "    try:\n        main([*args, '--db', {db!r}])\n    except SystemExit:\n        pass\n"
        "made = sorted(f'{{m}}.{{k}}' for m, mod in list(sys.modules.items()) if m.startswith('statectl')"
        " for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == m and any("
        "getattr(getattr(f, '__code__', None), 'co_filename', '') == '<string>' for f in vars(v).values()))\n"
        "print('COMPILED', *made)"
    ).format(args=[["threads"], ["log", thread], ["log", thread, "--oneline"], ["show", thread]], db=db)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == "COMPILED", proc.stderr[-2000:] + last


@pytest.mark.parametrize(
    ("module", "names"), [("app", ["root", "print_version"]), ("threads", ["threads"]), ("history", ["log", "show"])]
)
def test_the_common_commands_annotations_are_evaluated_once(module, names):
    """Typer reads a command's parameters twice at every start (`inspect.signature(eval_str=True)`
    and `get_type_hints`): an annotation left a string (`from __future__ import annotations`) is
    compiled and evaluated each time, options rebuilt (~2 ms of every start); evaluated when the
    module is imported, they come from the .pyc."""
    mod = importlib.import_module(f"statectl.cli.{module}")
    for name in names:
        fn = inspect.unwrap(getattr(mod, name))
        strings = {k: v for k, v in inspect.get_annotations(fn).items() if isinstance(v, str)}
        assert not strings, (module, name, strings)


def test_the_decoder_looks_into_blobs_from_the_size_arrays_walks():
    """codec.decode asks codec.arrays (imported then) from the size arrays starts at."""
    from statectl.codec import arrays, decode

    assert decode.MIN_BLOB == arrays.MIN_BLOB


def test_escape_returns_a_printable_text_at_once_and_escapes_the_rest_as_before():
    """`escape` skips compiling its pattern for a printable text: over every code point (alone
    and inside a text), what it returns is what the pattern's substitution gives."""
    import re

    from statectl import escape as mod

    pattern = re.compile(mod._CONTROLS)
    for code in range(0x110000):
        ch = chr(code)
        want = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        assert mod.escape(f"a{ch}b") == (f"a{want}b" if pattern.search(ch) else f"a{ch}b"), hex(code)
    assert mod.CONTROLS.pattern == mod._CONTROLS


def test_a_database_with_no_file_beside_it_is_opened_without_reading_proc_locks(run, dbs, monkeypatch):
    """Only a -wal, -shm or -journal file says a writer may have the database open: with none,
    the SQLite source reads no /proc/locks (its first read in a process costs ~10 ms of wall
    time on some kernels); with a -wal it still does (a live writer: tests/test_safety.py)."""
    import builtins

    opened: list[str] = []
    real = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    for name in ("agent", "deep"):
        db = dbs[name]
        assert not [p for p in db.parent.iterdir() if p.name.startswith(f"{db.name}-")]
        r = run("threads", "--db", str(db))
        assert r.code == 0, r.err
        assert "/proc/locks" not in opened
    wal = dbs["agent"].with_name("agent.sqlite-wal")
    wal.write_bytes(b"")  # (an empty -wal: the file is still read whole, as before)
    r = run("threads", "--db", str(dbs["agent"]))
    assert r.code == 0, r.err
    assert "/proc/locks" in opened


def test_completion_options_are_built_only_where_the_root_can_read_them(run, dbs, monkeypatch):
    """`--install-completion` and `--show-completion` are the root's options, read before a
    command's name: `statectl threads ...` (the name first, no shell asking) does not build them;
    `statectl --show-completion` is still the root's option, and after a command they are refused
    as before."""
    import typer.main

    built = []
    real = typer.main.get_install_completion_arguments
    monkeypatch.setattr(typer.main, "get_install_completion_arguments", lambda: built.append(1) or real())
    db = str(dbs["agent"])
    for args in (["threads", "--db", db], ["log", _thread(db), "--db", db], ["show", _thread(db), "--db", db]):
        assert run(*args).code == 0
    assert built == []
    r = run("--db", db, "threads")
    assert r.code == 0
    assert built == [1]
    r = run("threads", "--show-completion", "bash")
    assert r.code == 2
    assert "No such option: --show-completion" in r.err
    r = run("--show-completion")  # (the root's option still: what it prints depends on the shell it finds)
    assert "No such option" not in r.err
    assert built == [1, 1]


def test_js_time_is_what_its_pattern_matches():
    """`core.js.js_time` tests LangGraph.js's `toISOString()` form without compiling a pattern at
    every start: it says what `^\\d{4}-...\\.\\d{3}Z$` says of every kind of text around that form."""
    import re

    from statectl.core.js import js_time

    pattern = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    base = "2026-11-26T00:47:51.330Z"
    texts = [base, base + "\n", base + "\n\n", "\n" + base, base[:-1] + "z", base + " ", base[:-1], "", "Z", "\n"]
    texts += ["2026-11-26T00:47:51.330+00:00", "2026-11-26 00:47:51.330Z", "\u0662\u0660\u0662\u0666" + base[4:]]
    for i in range(len(base)):
        for ch in ("0", "9", "-", "T", ":", ".", "Z", "x", "\u0663", "\uff11", "\u00b2", "\n", " "):
            texts.append(base[:i] + ch + base[i + 1 :])
            texts.append(base[:i] + ch + base[i:])
    for text in texts:
        assert js_time(text) == (pattern.match(text) is not None), repr(text)
    assert not js_time(None)
    assert not js_time(20261126)


@pytest.mark.parametrize("name", DBS)
def test_the_common_commands_into_a_pipe_measure_no_text_with_richs_width_tables(dbs, name):
    """Into a pipe, `threads`, `log` and `show` measure what they write: text that is printable
    ASCII or Latin, or holds only statectl's own drawn characters (`→`, `✖`, a box's lines), is
    measured without rich.cells and its Unicode table (~3 ms of every start). Every thread of
    every sample store, `show --full` and `log --oneline` included."""
    db = str(dbs[name])
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        threads = [r[0] for r in c.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")]
    argss = [["threads"], ["threads", "--limit", "0"]]
    argss += [a for t in threads for a in (["show", t], ["show", t, "--full"], ["log", t], ["log", t, "--oneline"])]
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"for args in {argss!r}:\n"
        f"    try:\n        main([*args, '--db', {db!r}])\n    except SystemExit as e:\n"
        "        assert not e.code, (args, e.code)\n"
        "    print('LOADED', args, sorted(m for m in sys.modules if m.startswith(('rich.cells', 'rich._unicode'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    loaded = [line for line in proc.stdout.splitlines() if line.startswith("LOADED ")]
    assert len(loaded) == len(argss), proc.stderr[-2000:]
    assert all(line.endswith(" []") for line in loaded), next(x for x in loaded if not x.endswith(" []"))


def _code_point_classes() -> list[str]:
    """A character of every kind: every code point to U+30FF (controls, C1, Latin, the soft
    hyphen, combining marks, Greek, Cyrillic, right-to-left scripts, zero-width and bidi marks,
    arrows, box drawing, dingbats, CJK punctuation, kana), one in 61 above it (CJK, Hangul,
    surrogates, private use, fullwidth forms, the astral planes), and the wide, joining and
    selecting characters by name (emoji, variation selectors, tags, regional indicators)."""
    named = "\u200b\u200c\u200d\u200e\u2028\u2060\ufe0e\ufe0f\ufeff\ufffd\uffff\U0001f600\U0001f469\U0001f4bb"
    named += "\u2764\u2705\u231a\u2b50\U0001f1eb\U0001f1f7\U000e0041\U000e007f\U0010ffff\u00ad\u0301\u0488\u1100"
    return [chr(c) for c in range(0x3100)] + [chr(c) for c in range(0x3100, 0x110000, 61)] + list(named)


def test_width_is_richs_cell_len_over_every_code_point_class():
    """render.pipe.width answers printable ASCII, printable Latin and statectl's drawn characters
    itself and asks Rich for the rest: every kind of character, alone and among ASCII, Latin,
    drawn, wide, joining (ZWJ) and emoji-selecting (VS16) neighbours, measures what Rich's
    `cell_len` measures."""
    from rich.cells import cell_len

    from statectl.render.pipe import DRAWN, width

    contexts = ("{}", "a{}b", "{}→", "é{}─ ✖", "{}\u200d", "{}\ufe0f", "漢{}", "╭─ {} ─╮", "{}{}")
    for ch in _code_point_classes():
        for context in contexts:
            text = context.format(ch, ch)
            assert width(text) == cell_len(text), (hex(ord(ch)), context)
    assert width(DRAWN) == cell_len(DRAWN) == len(DRAWN)
    assert width("") == cell_len("") == 0


def test_statectls_drawn_characters_are_one_cell_in_every_unicode_version_rich_knows():
    """The drawn characters `width` counts itself are one cell whatever UNICODE_VERSION picks,
    and they are every character the pipe's renderers draw (one added there is listed in DRAWN,
    or measured by Rich: correct, but a start loading its tables)."""
    import ast

    from rich._unicode_data._versions import VERSIONS
    from rich.cells import get_character_cell_size

    from statectl.render import pipe

    for version in VERSIONS:
        assert [get_character_cell_size(ch, version) for ch in pipe.DRAWN] == [1] * len(pipe.DRAWN), version
    root = Path(pipe.__file__).parent.parent
    drawn = set()
    modules = ("render/pipe.py", "render/pipe_layout.py", "render/pipe_show.py", "render/__init__.py", "core/text.py")
    for module in modules:
        tree = ast.parse((root / module).read_text(encoding="utf-8"))
        skip = {  # (docstrings; `width`'s own bound)
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr)
        }
        skip |= {id(c) for f in ast.walk(tree) if getattr(f, "name", "") == "width" for c in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                drawn |= {ch for ch in node.value if not ch.isascii() and ch.isprintable()}
    assert drawn - {*pipe.DRAWN} == set()
    assert len(drawn) > 10  # (the test reads the renderers' strings)


def test_the_common_commands_evaluate_no_string_annotation(dbs):
    """Typer reads every parameter of the command it runs and of each option's completion
    callback (`cli.options.completing`) at every start: no annotation on those paths is a string
    compiled and evaluated there (`typing.ForwardRef`: 12 a start from the completion callbacks)."""
    db = str(dbs["agent"])
    thread = _thread(db)
    code = (
        "import sys, typing\nfrom statectl.cli import main\nmade = []\n"
        "evaluate = typing.ForwardRef._evaluate\n"
        "def counted(self, *a, **k):\n    made.append(self.__forward_arg__)\n    return evaluate(self, *a, **k)\n"
        "typing.ForwardRef._evaluate = counted\n"
        "for args in {args!r}:\n"
        "    try:\n        main([*args, '--db', {db!r}])\n"
        "    except SystemExit as e:\n        assert not e.code, args\n"
        "print('EVALUATED', *made)"
    ).format(args=[["threads"], ["log", thread], ["log", thread, "--oneline"], ["show", thread]], db=db)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == "EVALUATED", proc.stderr[-2000:] + last
