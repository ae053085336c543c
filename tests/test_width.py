"""The width policy (render/columns.py): identifiers are never shortened at any width; text,
time and counts give way first, in that order; into a pipe every cell is whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from statectl.render.columns import COUNT, ID, TEXT, TIME, Col, fit, fold_id


def cells_by_column(out: str, reasons: dict[str, str] | None = None) -> list[list[str]]:
    """A PlainTable's rows read back: each column cut at its header's start; a line whose first
    two columns are blank continues the row above (a folded identifier), its pieces joined; a line
    whose first column alone is blank is the row's reason (an error, an interrupt: its column left
    out), put in `reasons` by the row's first cell, its lines joined."""
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith(("THREAD", "STEP", "CHANNEL")))
    header = lines[head]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1 : i + 1] == " " + ch)]
    starts = [s for j, s in enumerate(starts) if j == 0 or s - starts[j - 1] > 1 or header[s - 2] == " "]
    starts = [s for s in starts if s == 0 or header[s - 2 : s] == "  "]
    rows: list[list[str]] = []
    for line in lines[head + 1 :]:
        if line.startswith("("):
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        if rows and not cells[0] and cells[1] and line[: starts[1]].strip() == "":
            if reasons is not None:
                key = rows[-1][0] or rows[-1][2]
                reasons[key] = (reasons[key] + " " if key in reasons else "") + line.strip()
            continue
        if rows and not cells[0] and not cells[1]:
            rows[-1] = [x + y for x, y in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    return rows


def statectl(*args: str, columns: int | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = str(columns)
    done = subprocess.run(
        [sys.executable, "-m", "statectl", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fit_gives_way_in_order():
    cols = [Col("thread", ID), Col("status"), Col("n", COUNT), Col("at", TIME), Col("preview", TEXT)]
    widths = [30, 8, 4, 19, 40]
    assert fit(cols, widths, [False] * 5, 200) == (widths, [])
    out, gone = fit(cols, widths, [False] * 5, 90)  # the preview shortens first, down to its floor
    assert gone == []
    assert out[:4] == widths[:4]
    assert out[4] == 90 - (30 + 8 + 4 + 19 + 8)
    out, gone = fit(cols, widths, [False] * 5, 60)  # then goes; the time goes before the count
    assert gone == [3, 4]
    assert out == [30, 8, 4, None, None]
    out, gone = fit(cols, widths, [False] * 5, 40)  # then the count; then the id folds
    assert gone == [2, 3, 4]
    assert out == [30, 8, None, None, None]
    out, gone = fit(cols, widths, [False] * 5, 30)
    assert out == [20, 8, None, None, None]
    out, gone = fit(cols, widths, [False, False, False, False, True], 67)  # an empty text: gone first
    assert gone == [4]
    assert out == [30, 8, 4, 19, None]


def test_fold_id_keeps_every_character():
    from rich.text import Text

    for text in ["HumanInTheLoopMiddleware.after_model", "a, b, materialized_business_idea, c", "x" * 50]:
        for width in (8, 12, 25):
            lines = fold_id(Text(text), width)
            assert all(len(line.plain) <= width for line in lines)
            assert "".join(line.plain for line in lines).replace(" ", "") == text.replace(" ", "")
    assert [t.plain for t in fold_id(Text("TodoListMiddleware.after_model"), 25)] == [
        "TodoListMiddleware.",
        "after_model",
    ]
    assert [t.plain for t in fold_id(Text("LanguageDetectorMiddleware.before_model"), 25)] == [
        "LanguageDetector",  # (no dot within 25: the CamelCase words, not `LanguageDetectorMiddlewar`)
        "Middleware.before_model",
    ]


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
def test_threads_ids_whole_at_every_width(dbs, columns):
    """Seen at 80 columns: `order-000…` five times; every row looked the same."""
    for name in ("agent", "custom", "interrupts", "deep"):
        out = statectl("threads", "--db", str(dbs[name]), columns=columns)
        rows = cells_by_column(out)
        ids = [t["thread_id"] for t in json.loads(statectl("threads", "--db", str(dbs[name]), "--json", columns=None))]
        assert sorted(r[0] for r in rows) == sorted(ids), out
        assert max(len(line) for line in out.splitlines()) <= columns
        header = next(line for line in out.splitlines() if line.startswith("THREAD"))
        assert "…" not in "".join(r[0] + r[1] for r in rows)
        if "PREVIEW" not in header:
            assert "PREVIEW" in " ".join(out.splitlines()[-2:])  # said, not silently dropped


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_log_node_names_whole(dbs, columns):
    """Seen at 80: `TodoListM…`, `HumanInTh…`, and an empty NOTES column kept its width."""
    out = statectl("log", "bakery-plan", "--db", str(dbs["agent"]), columns=columns)
    piped = cells_by_column(statectl("log", "bakery-plan", "--db", str(dbs["agent"]), columns=None))
    rows = cells_by_column(out)
    header = out.splitlines()[1].split()
    ran, changed = header.index("RAN"), header.index("CHANGED")
    assert "NOTES" not in header  # no notes in this thread: the empty column is not kept
    whole = {r[2]: (r[-3].replace(" ", ""), r[-2].replace(" ", "")) for r in piped}
    assert len(rows) == len(piped) == 36
    for r in rows:
        assert (r[ran].replace(" ", ""), r[changed].replace(" ", "")) == whole[r[2]]
    assert max(len(line) for line in out.splitlines()) <= columns
    assert "…" not in out


def _stays(reason: str, whole: str) -> bool:
    """`reason` (as shown under a row) is `whole` (as a pipe shows it), or its start cut with '…'."""
    return reason == whole or (reason.endswith("…") and whole.startswith(reason[:-1].rstrip()))


@pytest.mark.parametrize("columns", [60, 80, 90])
def test_threads_keep_the_error_and_the_question_when_preview_goes(dbs, columns):
    """At 80 columns the PREVIEW went, and with it the error and the interrupt question: they go
    under their rows instead; a done thread's first message goes with the column."""
    seen = 0
    for name in ("agent", "custom", "interrupts", "deep"):
        piped = cells_by_column(statectl("threads", "--db", str(dbs[name]), columns=None))
        whole = {r[0]: r[-1] for r in piped}
        out = statectl("threads", "--db", str(dbs[name]), columns=columns)
        reasons: dict[str, str] = {}
        rows = cells_by_column(out, reasons)
        assert sorted(r[0] for r in rows) == sorted(whole), out
        assert max(len(line) for line in out.splitlines()) <= columns
        header = next(line for line in out.splitlines() if line.startswith("THREAD"))
        if "PREVIEW" in header:
            assert not reasons, out
            continue
        for thread, preview in whole.items():
            if preview.startswith(("✖", "⏸")):  # (a breakpoint's thread has no question: its input shows)
                assert _stays(reasons.pop(thread), preview), (thread, out)
                seen += 1
        assert not reasons, out  # (no other row's preview)
    assert seen >= 4


@pytest.mark.parametrize("columns", [60, 80, 90])
def test_log_keeps_errors_interrupts_and_branches_when_notes_go(dbs, columns):
    seen = 0
    for name, thread in (
        ("agent", "market-lookup-fails"),
        ("agent", "investor-email"),
        ("custom", "parse-fails"),
        ("custom", "approval-waiting"),
        ("custom", "notes-edits"),
        ("interrupts", "subgraph-waiting"),
    ):
        piped = cells_by_column(statectl("log", thread, "--db", str(dbs[name]), columns=None))
        notes = {r[2]: r[-1] for r in piped}
        out = statectl("log", thread, "--db", str(dbs[name]), columns=columns)
        reasons: dict[str, str] = {}
        cells_by_column(out, reasons)
        assert max(len(line) for line in out.splitlines() if not line.startswith("other namespaces")) <= columns
        if "NOTES" in out.splitlines()[1]:
            assert not reasons, out
            continue
        for checkpoint, note in notes.items():
            why = [w for w in ("error in", "interrupt:", "branches") if w in note]
            if why:
                step = next(r[0] for r in piped if r[2] == checkpoint)
                shown = reasons.pop(step)
                assert all(w in shown for w in why), (shown, note)
                assert _stays(shown, note) or note.startswith(shown), (shown, note)
                seen += 1
        assert not reasons, out
    assert seen >= 5


def test_size_thread_keeps_channel_names(dbs):
    """Seen at 80x24: the CHANNEL column disappeared and SHARE showed `3…`."""
    for columns in (60, 80):
        out = statectl("size", "bakery-plan", "--db", str(dbs["agent"]), columns=columns)
        rows = cells_by_column(out)
        names = [r[0] for r in rows]
        assert "materialized_business_idea" in names
        assert "messages" in names
        assert "…" not in out


def test_sparkline_one_cell_per_step_under_the_width():
    """Every bar was full height for a thread under 60 checkpoints, and with 36 points only the
    first ~21 were drawn."""
    from statectl.render.size import SPARK, sparkline

    line = sparkline(list(range(1, 37))).plain
    assert len(line) == 36
    assert line[0] == SPARK[0]
    assert line[-1] == SPARK[-1]
    assert list(line) == sorted(line)
    wide = sparkline(list(range(600))).plain
    assert len(wide) == 60
    assert wide[0] == SPARK[0]
    assert wide[-1] == SPARK[-1]


def test_a_pipe_gets_whole_lines(dbs):
    """Through a real pipe (no terminal, no COLUMNS) nothing is cut or wrapped at 80 columns:
    `diff T 12 | cat` ended a value mid-word with no marker, `prune | cat` wrapped its summary,
    `show | cat` wrapped messages inside their panel. Nothing pads lines to the pipe's width."""
    agent = str(dbs["agent"])
    diff = statectl("diff", "bakery-plan", "12", "--db", agent, columns=None)
    line = next(x for x in diff.splitlines() if "Sourdough" in x)
    assert "baked at dawn" in line  # (the 80-column cut fell in 'd|awn')
    assert line.rstrip().endswith("chars)")  # the 70-character rule still applies, and says so
    logp = statectl("log", "-p", "bakery-plan", "--db", agent, columns=None)
    assert any("baked at dawn" in x for x in logp.splitlines())
    prune = statectl("prune", "--keep-last", "2", "--db", agent, columns=None)
    assert any(x.startswith("50 of 58 checkpoints") and x.endswith("after a backup.") for x in prune.splitlines())
    show = statectl("show", "bakery-plan", "--db", agent, columns=None)
    assert any("I want to open a bakery in Lisbon. Help me shape the idea." in x for x in show.splitlines())
    assert any("Email the cofounder" in x and "completed" in x for x in show.splitlines())
    for out in (diff, logp, prune, show):
        assert max(len(x) for x in out.splitlines()) < 2000  # (nothing padded to the pipe's width)
    narrow = statectl("show", "bakery-plan", "--db", agent, columns=80)  # a terminal still wraps
    assert max(len(x) for x in narrow.splitlines()) <= 80


@pytest.mark.parametrize(
    "text",
    [
        "a plain preview " * 20,
        "日本語のメッセージ" * 15,  # (two cells each)
        "e\u0301" * 120,  # (a letter and a combining accent: one cell for two characters)
        "\u200b" * 90 + "zero-width first" * 5,  # (zero-width spaces: no cell at all)
        "👩\u200d💻 dev " * 30,  # (an emoji joined by a zero-width joiner)
        "mixed: ascii, 日本, é\u0301, 🎉 " * 12,
        "short",
    ],
)
def test_shorten_cuts_as_rich_truncate_does(text):
    """`shorten` crops a long text before Rich measures it (the threads screen's previews), and
    gives what `Text.truncate(width, overflow="ellipsis")` gives, characters and styles alike."""
    from rich.text import Text

    from statectl.render.columns import shorten

    for width in range(0, 70):
        styled = Text(text, style="dim")
        styled.stylize("bold", 3, 40)
        expected, got = styled.copy(), styled.copy()
        expected.truncate(width, overflow="ellipsis")
        shorten(got, width)
        assert (got.plain, got.spans, got.style) == (expected.plain, expected.spans, expected.style), width
