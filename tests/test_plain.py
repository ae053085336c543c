"""Into a pipe, statectl prints tables and `log -p` / `diff` bodies as plain lines, not laid out by
Rich (render/plain.py, PlainTable._plain_parts): the bytes must be the ones Rich printed, for
hostile text too; only a line past the pipe's width differs (Rich cut it; now it is whole)."""

from __future__ import annotations

import io

import pytest
from parity import DBS
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from statectl.core import diff as core_diff
from statectl.render import columns, plain
from statectl.render.columns import COUNT, ID, TEXT, Col, PlainTable
from statectl.render.plain import Lines, plain_text
from statectl.render.safe import SafeConsole

HOSTILE = [
    "plain",
    "tab\there",
    "\x1b]52;c;Y2xpcA==\x07clipboard",
    "wide 漢字 and ＡＢＣ",
    "trailing   ",
    "",
    "   ",
    "ideographic\u3000",
    "new\nline",
    "\u202ebackwards",
    "zero\u200bwidth",
    "[bold]not markup[/bold] :smile:",
]


def pipe_console(monkeypatch) -> tuple[SafeConsole, io.StringIO]:
    """The console `make_console` gives a pipe (not a terminal, no COLUMNS), writing to a buffer."""
    monkeypatch.delenv("COLUMNS", raising=False)
    from statectl.cli.output import make_console

    console = make_console()
    console.file = out = io.StringIO()
    assert not console.is_terminal
    assert columns.natural_width(console)
    return console, out


def printed(monkeypatch, *renderables, **kw) -> str:
    console, out = pipe_console(monkeypatch)
    for r in renderables:
        console.print(r, **kw)
    return out.getvalue()


def table(rows: list[list[str]]) -> PlainTable:
    t = PlainTable("title  with \x1b[2J", [Col("thread", ID), Col("n", COUNT, right=True), Col("preview", TEXT)])
    for i, row in enumerate(rows):
        t.add_row(*[Text(c, style="bold") if j == 0 else c for j, c in enumerate(row)], style="dim" if i % 2 else None)
    return t


@pytest.mark.parametrize("chunk", [1, 3, 500])
def test_a_table_into_a_pipe_is_the_text_rich_lays_out(monkeypatch, chunk):
    """Every hostile cell in every column: the plain rows equal Rich's, byte for byte (a chunk
    with a tab goes to Rich, which expands it), escaped, no trailing blanks."""
    monkeypatch.setattr(PlainTable, "CHUNK", chunk)
    rows = [[a, b, c] for a, b, c in zip(HOSTILE, HOSTILE[3:] + HOSTILE[:3], HOSTILE[6:] + HOSTILE[:6], strict=True)]
    rows += [["", "", ""], ["x", "", ""], ["", "7", ""], ["id", "12", "   "]]
    from statectl.cli.output import emit

    def through_emit() -> str:
        console, out = pipe_console(monkeypatch)
        monkeypatch.setattr("statectl.cli.output.make_console", lambda: console)
        emit(table(rows))
        return out.getvalue()

    fast = through_emit()
    monkeypatch.setattr(PlainTable, "PLAIN", False)
    slow = through_emit()
    assert fast == slow
    assert "\\x1b]52" in fast
    assert "\x1b" not in fast
    assert "\\u202e" in fast
    assert all(line == line.rstrip(" ") for line in fast.splitlines())
    assert "[bold]not markup[/bold] :smile:" in fast


@pytest.mark.parametrize("chunk", [1, 3, 500])
def test_plain_rows_print_what_text_rows_print(monkeypatch, chunk):
    """`add_plain_row` (`log`'s table into a pipe: no Text made a cell) prints the bytes the same
    cells print as Text rows laid out by Rich: every hostile cell in every column, escaped; and
    where such a table is printed elsewhere after all (PLAIN off), as Text rows."""
    monkeypatch.setattr(PlainTable, "CHUNK", chunk)
    rows = [[a, b, c] for a, b, c in zip(HOSTILE, HOSTILE[4:] + HOSTILE[:4], HOSTILE[7:] + HOSTILE[:7], strict=True)]
    rows += [["", "", ""], ["x", "", ""], ["", "7", ""], ["id", "12", "   "]]
    from statectl.cli.output import emit

    def through_emit(t: PlainTable) -> str:
        console, out = pipe_console(monkeypatch)
        monkeypatch.setattr("statectl.cli.output.make_console", lambda: console)
        emit(t)
        return out.getvalue()

    def plain_table() -> PlainTable:
        t = PlainTable("title  with \x1b[2J", [Col("thread", ID), Col("n", COUNT, right=True), Col("preview", TEXT)])
        for row in rows:
            t.add_plain_row(*row)
        return t

    fast = through_emit(plain_table())
    assert plain_table().plain_rows is not None
    assert not plain_table().rows
    monkeypatch.setattr(PlainTable, "PLAIN", False)
    assert fast == through_emit(table(rows)) == through_emit(plain_table())
    assert "\\x1b]52" in fast
    assert "\x1b" not in fast
    assert all(line == line.rstrip(" ") for line in fast.splitlines())


def test_a_table_without_a_tab_is_not_laid_out_by_rich(monkeypatch):
    """The fast path is taken (one segment a chunk), so the comparison above compares two paths."""
    console, _out = pipe_console(monkeypatch)
    parts = list(table([["a", "1", "x"], ["b", "2", "y"]]).stream(console))
    assert any(isinstance(p, Lines) for p in parts)
    parts = list(table([["a", "1", "x\ty"]]).stream(console))
    assert not any(isinstance(p, Lines) for p in parts)


RENDERABLES = [
    Text("one line"),
    Text.assemble(("styled ", "bold red"), ("parts", "dim"), " and \x1b[31m escapes"),
    Text(""),
    Text("trailing blanks    "),
    Text("two\n\nblank line between"),
    Text("wide 漢字 ＡＢＣ then \u202e and \u200b"),
    Group(Text("a"), Padding(Text("b  \nc"), (0, 0, 0, 4), expand=False), Text("")),
    Padding(
        Group(Text("x"), Padding(Group(Text("y"), Text(" z ")), (0, 0, 0, 4), expand=False)), (0, 0, 0, 2), expand=False
    ),
    Text("[red]not markup[/red] :smile:"),
]


@pytest.mark.parametrize("renderable", RENDERABLES, ids=range(len(RENDERABLES)))
def test_plain_text_is_what_rich_prints_into_a_pipe(monkeypatch, renderable):
    text = plain_text([renderable])
    assert text is not None
    assert printed(monkeypatch, Lines(text)) == printed(monkeypatch, renderable, soft_wrap=True)


@pytest.mark.parametrize(
    "renderable",
    [
        Text("a\tb"),
        Text("right", justify="right"),
        Text("no end", end=""),
        Padding(Text("top"), (1, 0, 0, 4)),
        Padding(Text("expanded"), (0, 0, 0, 4)),
        Group(Text("ok"), Table("a table")),
    ],
    ids=["tab", "justified", "end", "top", "expand", "table"],
)
def test_plain_text_leaves_to_rich_what_it_does_not_know(renderable):
    assert plain_text([renderable]) is None


def test_a_line_past_the_pipe_width_is_whole(monkeypatch):
    """Rich cut a padded line at 65,536 cells (a word diff of a long Korean text was, mid-escape);
    the plain path prints it whole, as a pipe must."""
    long = "漢" * 40_000  # 80,000 cells
    text = plain_text([Padding(Text(long), (0, 0, 0, 4), expand=False)])
    out = printed(monkeypatch, Lines(text), crop=False)
    assert out == "    " + long + "\n"
    assert len(printed(monkeypatch, Padding(Text(long), (0, 0, 0, 4), expand=False), soft_wrap=True)) < len(out)


@pytest.mark.parametrize("name", DBS)
def test_log_p_and_diff_into_a_pipe_are_the_same_without_rich(run, dbs, monkeypatch, name):
    """Every thread's `log -p` (and with --internal) and `diff` of each sample, into a pipe: the
    plain lines equal Rich's."""
    import json

    monkeypatch.delenv("COLUMNS", raising=False)
    db = str(dbs[name])
    threads = [t["thread_id"] for t in json.loads(run("threads", "--json", "--limit", "0", "--db", db).out)]
    commands = [
        args
        for t in threads
        for args in (["log", "-p", t], ["log", "-p", "--internal", t], ["diff", t], ["log", t], ["threads"])
    ]

    def outputs() -> list[tuple[int, str]]:
        return [(r.code, r.out) for r in (run(*args, "--db", db) for args in commands)]

    fast = outputs()
    monkeypatch.setattr(plain, "plain_text", lambda renderables: None)
    monkeypatch.setattr(PlainTable, "PLAIN", False)
    slow = outputs()
    assert fast == slow
    assert sum(out.count("\n") for _, out in fast) > 20 * len(threads)


def test_the_message_ids_a_walk_keeps_never_change_a_step(run, dbs, monkeypatch):
    """`log -p` reads each list of message ids once (`_Known`): every step's diff is the same as
    with nothing kept, including where add_messages replaced a message by id."""
    db = str(dbs["agent"])
    threads = ["bakery-plan", "market-lookup-fails", "hola-panaderia"]
    kept = [run("log", "-p", "--json", t, "--db", db).out for t in threads]
    monkeypatch.setattr(core_diff._IDS, "of", lambda messages: None)
    fresh = [run("log", "-p", "--json", t, "--db", db).out for t in threads]
    assert kept == fresh
    assert all(k.count("\n") > 3 for k in kept)


def test_a_message_replaced_by_id_is_not_taken_for_an_append():
    """With the ids of the longer list kept from an earlier step, a 'new' message whose id was
    seen before still sends the diff to the full match by id (add_messages replaced it)."""

    def msg(i: str, text: str) -> dict:
        return {"$type": "langchain_core.messages.ai.AIMessage", "data": {"id": i, "content": text}}

    before = [msg("a", "1"), msg("b", "2")]
    after = [*before, msg("a", "1 again")]
    core_diff._grown_messages(after, [*after, msg("c", "3")])  # keeps `after`'s ids
    assert core_diff._IDS.of(after) == ["a", "b", "a"]
    assert core_diff._grown_messages(before, after) is None
    grown = core_diff._grown_messages(before, [*before, msg("c", "3")])
    assert grown is not None
    assert [m.id for m in grown] == ["c"]


def test_log_p_and_diff_print_a_line_past_the_pipe_width_whole(run, tmp_path, monkeypatch):
    """From a real run: a value of 40,000 wide characters on one line (80,000 cells), `--full`,
    into a pipe: `log -p` and `diff` print it whole (Rich cut it at 65,536 cells)."""
    from conftest import one_node_runs
    from langchain_core.messages import AIMessage, HumanMessage
    from long_chat import Chat

    text = "漢字" * 20_000

    def reply(state: Chat) -> dict:
        return {"messages": [AIMessage("noted")], "notes": text}

    cfg = {"configurable": {"thread_id": "wide"}}
    db = str(one_node_runs(tmp_path / "wide.sqlite", Chat, reply, [({"messages": [HumanMessage("hi")]}, cfg)]))
    monkeypatch.delenv("COLUMNS", raising=False)
    for args in (["log", "-p", "--full", "wide"], ["diff", "--full", "wide"]):
        r = run(*args, "--db", db)
        assert r.code == 0, r.err
        assert text in r.out, args


def test_log_lays_out_no_row_of_its_table_again(run, monkeypatch):
    """`log` into a pipe measures each cell once, where its rows are added, and joins each line
    without measuring it again (`_plain_line`): `_aligned` lays out the header alone, not one
    call a row (37 on this thread before). The lines are those of the table laid out by Rich."""
    from parity import SAMPLES

    calls = []
    aligned = PlainTable._aligned

    def counted(self, *args):
        calls.append(1)
        return aligned(self, *args)

    monkeypatch.setattr(PlainTable, "_aligned", counted)
    monkeypatch.delenv("COLUMNS")  # (a pipe: no width)
    # (`plain_pipe` writes it without the table at all, render/pipe.py: here, the table's own plain rows)
    monkeypatch.setattr("statectl.cli.history.plain_pipe", lambda: False)
    fast = run("log", "bakery-plan", "--db", str(SAMPLES / "agent.sqlite"))
    assert fast.code == 0
    assert len(fast.out.splitlines()) > 30
    assert len(calls) == 1
    monkeypatch.setattr(PlainTable, "PLAIN", False)
    assert run("log", "bakery-plan", "--db", str(SAMPLES / "agent.sqlite")).out == fast.out


@pytest.mark.parametrize(
    "text",
    [
        "a\nb  c\n\nd\n",
        "a\nb\n",
        "a  \nb\n",
        "   \nb\n",
        "\n\n",
        "a\nrest",
        "a\nrest  ",
        "ideographic\u3000\nx\n",
        "no newline",
        "trailing  ",
    ],
)
def test_plain_lines_pass_the_trimming_whole(text):
    """A segment of plain lines none of which ends in a blank goes through the trimming of a
    pipe's padding whole (a long table's chunk: one segment, not two a line); the text is the
    one the line-by-line trimming gives (a styled segment takes it), before and after a
    partial line."""
    from rich.segment import Segment
    from rich.style import Style

    from statectl.render.safe import _no_trailing_blanks

    def trimmed(segments):
        return "".join(s.text for s in _no_trailing_blanks(segments))

    bold = Style(bold=True)
    for before in ([], [Segment("x  ")], [Segment("x  ", bold), Segment("  ")]):
        assert trimmed([*before, Segment(text), Segment("end  ")]) == trimmed(
            [*before, Segment(text, bold), Segment("end  ")]
        )
    if "\n" in text and " \n" not in text:
        assert len(list(_no_trailing_blanks([Segment(text)]))) <= 2
