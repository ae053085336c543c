"""The TUI at the sizes people use (80x24, 200x50) and the ways to find things in it: the
timeline's columns sharing the width, the transcript's width, the interrupt banner, search
across checkpoints, search hits that stay readable, the section cursor, the filter, and the
graph view (`g`). Driven with Textual's Pilot; the screens are pinned in test_tui_snapshots.py."""

from __future__ import annotations

from parity import SAMPLES
from textual.widgets import Input, Static
from tui_helpers import doc_text, settle

import statectl
from statectl.core.timeline import entries, state_text
from statectl.tui import make_app
from statectl.tui.screens.graph import GraphScreen
from statectl.tui.screens.thread import ThreadScreen
from statectl.tui.widgets.document import MATCH, Document
from statectl.tui.widgets.timeline import Timeline

SMALL, LARGE = (80, 24), (200, 50)


def _cells(app, column: str) -> list[str]:
    table = app.screen.query_one(Timeline)
    keys = list(table.widths)
    return [str(table.get_row_at(r)[keys.index(column)]) for r in range(table.row_count)]


async def test_at_80x24_node_names_are_never_cut(dbs):
    """Hook names longer than the column fold onto a second line of their row, every character
    kept (they were cut to `TodoLis….after_model`); at 200x50 the pane grows and every name is on
    one line."""
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = app.screen.query_one(Timeline)
        names = [", ".join(e.ran) for e in table.entries]
        shown = _cells(app, "ran")
        assert table.widths["ran"] < max(map(len, names))  # (folded at this size)
        assert [c.replace("\n", "").replace(" ", "") for c in shown] == [n.replace(" ", "") for n in names]
        assert "HumanInTheLoopMiddleware.\nafter_model" in shown
        assert all(len(line) <= table.widths["ran"] for c in shown for line in c.splitlines())
        assert "…" not in "".join(shown)
        assert "source" not in table.widths  # (the column that says least gives way first)
        heights = [table.get_row_height(r) for r in table.rows]
        assert max(heights) == 2
    async with make_app(str(dbs["agent"]), "bakery-plan", poll=0).run_test(size=LARGE) as pilot:
        await settle(pilot)
        app = pilot.app
        table = app.screen.query_one(Timeline)
        assert _cells(app, "ran") == [", ".join(e.ran) for e in table.entries]
        assert "changed" in table.widths
        assert app.screen.query_one("#left").size.width > 90  # (45% would be 90)


async def test_at_80x24_the_transcript_gets_the_width(dbs):
    """Messages under their role, with the pane's width (a role column beside them left the
    text 15 columns); tool-call arguments as JSON broken where they do not fit."""
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        lines = doc_text(app).splitlines()
        i = next(i for i, line in enumerate(lines) if line.strip() == "user")
        assert lines[i + 1].strip() == "I want to open a bakery in"  # the pane's width, less its scrollbar
        assert lines[i + 2].strip() == "Lisbon. Help me shape the idea."
        width = app.screen.query_one("#doc").text_width
        assert width == app.screen.query_one("#doc").scrollable_content_region.width
        transcript = lines[i : next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "assistant")]
        assert all(len(line.rstrip()) <= width for line in transcript)  # nothing drawn under the scrollbar
        assert any(line.strip() == "→ write_todos({" for line in lines), lines
        assert any(line.strip() == '"todos": [' for line in lines)
    async with make_app(str(dbs["agent"]), "bakery-plan", poll=0).run_test(size=LARGE) as pilot:
        await settle(pilot)
        lines = doc_text(pilot.app).splitlines()
        assert any(line.strip().startswith("user") and "I want to open a bakery" in line for line in lines)


async def test_the_interrupt_banner_is_three_lines_at_most_and_b_opens_it(dbs):
    app = make_app(str(dbs["agent"]), "investor-email", poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#banner", Static)
        assert banner.display
        assert banner.size.height <= 3
        assert "b: whole" in str(banner.render())
        await pilot.press("b")
        await settle(pilot)
        assert banner.size.height > 3
        assert "investors@example.com" in str(banner.render())
        await pilot.press("b")
        await settle(pilot)
        assert banner.size.height <= 3


async def test_slash_in_the_timeline_searches_every_checkpoint(dbs):
    """`/` with the timeline focused: the checkpoints whose state, nodes, keys or interrupts
    hold the text, marked ●; the cursor jumps to the first, n/N move between them, and the state
    pane marks the text in the hit."""
    store = statectl.open(str(dbs["agent"]))
    view = store.view("bakery-plan")
    needle = "pastéis"
    want = [e.record.checkpoint_id for e in entries(view) if needle in state_text(view, e.record)]
    assert 1 < len(want) < len(view.records)
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ThreadScreen)
        await pilot.press("slash", *needle, "enter")
        for _ in range(50):
            await settle(pilot)
            if screen.hits:
                break
        timeline = screen.query_one(Timeline)
        assert screen.hits == want
        assert timeline.marked == set(want)
        assert timeline.selected == want[0]
        assert "checkpoint 1 of" in str(screen.query_one("#where", Static).render())
        assert "●" in str(timeline.get_row_at(timeline.cursor_row)[0])
        await pilot.press("n")
        await settle(pilot)
        assert timeline.selected == want[1]
        assert "checkpoint 2 of" in str(screen.query_one("#where", Static).render())
        await pilot.press("N")
        assert timeline.selected == want[0]
        assert screen.query_one(Document).matches  # the text marked in the state too


async def test_search_hits_are_readable_over_coloured_text(dbs):
    """A hit inside a tool call's arguments (yellow text) is black on the mark, not the mark's
    colour on itself."""
    app = make_app(str(dbs["agent"]), "market-lookup-fails", poll=0)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        await pilot.press("enter", "slash", *"Porto")
        await settle(pilot)
        doc = app.screen.query_one(Document)
        assert doc.matches
        for n, (line, start, end) in enumerate(doc.matches):
            doc.scroll_to(y=line, animate=False)
            await settle(pilot)
            strip = doc.render_line(line - int(doc.scroll_offset.y))
            x, styles = 0, []
            for seg in strip:
                if start <= x < end and seg.text.strip():
                    styles.append(seg.style)
                x += len(seg.text)
            assert styles, (n, styles)
            assert all(s.color is not None and s.color.name == "black" for s in styles), (n, styles)
            assert all(s.bgcolor is not None for s in styles)
        assert MATCH.color.name == "black"


async def test_z_folds_the_section_under_a_visible_cursor(dbs):
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the state pane: its section cursor shows at once
        await settle(pilot)
        doc = app.screen.query_one(Document)
        assert doc.cursor is not None
        line = doc._title_line(doc.cursor)
        assert line is not None
        assert doc.scroll_offset.y <= line < doc.scroll_offset.y + doc.size.height
        title = doc.sections[doc.cursor].title
        await pilot.press("right_square_bracket")
        moved = doc.cursor
        await pilot.press("z")
        assert doc.sections[moved].folded
        assert doc.cursor == moved
        assert doc.sections[moved].title != title


async def test_the_filter_takes_spaces(tmp_path):
    """A space is text in the filter (typed into the box, or in a burst before it has focus)."""
    from conftest import one_node_runs
    from typing_extensions import TypedDict

    class S(TypedDict):
        n: int

    def step(state: S) -> dict:
        return {"n": state["n"] + 1}

    db = one_node_runs(
        tmp_path / "spaces.sqlite",
        S,
        step,
        [({"n": 0}, {"configurable": {"thread_id": tid}}) for tid in ("night shift", "night-shift", "day shift")],
    )
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press(*"night")  # typed into the list: the filter takes the keys
        await settle(pilot)
        box = app.screen.query_one("#filter", Input)
        assert box.value == "night"
        assert app.screen.focused is box
        # a fast burst: keys that reach the list before the box has the focus are text, spaces too
        app.screen.query_one("#threads").focus()
        app.screen._typing = True
        await pilot.press("space", "s")
        await settle(pilot)
        assert box.value == "night s"
        table = app.screen.query_one("#threads")
        assert [table.coordinate_to_cell_key((r, 0)).row_key.value for r in range(table.row_count)] == ["night shift"]


async def test_graph_view_shows_the_path_the_step_and_next(dbs):
    """`g`: the selected step's node in a heavy border, its `next` in a double one, the
    waiting node marked ⏸ on the thread's path; Esc goes back to the same step."""
    app = make_app(str(dbs["agent"]), "investor-email", poll=0)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        await pilot.press("j", "j")
        await settle(pilot)
        selected = app.screen.query_one(Timeline).selected
        await pilot.press("g")
        for _ in range(50):
            await settle(pilot)
            if isinstance(app.screen, GraphScreen) and "┃" in _graph(app):
                break
        text = _graph(app)
        where = str(app.screen.query_one("#graph-where").render())
        assert "inferred from the history of thread investor-email" in where
        assert "┃ SkillsMiddleware.before_agent ×1 ┃" in text  # ran at the selected step (2)
        assert "║ LanguageDetectorMiddleware.before_model ×1 ║" in text  # its next
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        assert app.screen.query_one(Timeline).selected == selected


async def test_graph_view_with_the_apps_graph_unfolds_subgraphs(dbs):
    app = make_app(str(dbs["custom"]), "nested", poll=0, graph=str(SAMPLES / "custom_app.py:nested_builder"))
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        for _ in range(50):
            await settle(pilot)
            if isinstance(app.screen, GraphScreen) and "research" in _graph(app):
                break
        assert "│ research ×1 │" in _graph(app)
        assert "research:gather" not in _graph(app)
        await pilot.press("x")
        for _ in range(50):
            await settle(pilot)
            if "research:gather" in _graph(app):
                break
        assert "research:deep:dig" in _graph(app)


def _graph(app) -> str:
    return str(app.screen.query_one("#graph", Static).render())


async def test_S_shows_where_the_threads_bytes_go(dbs, run):
    """`S`: the thread's bytes by channel and its size per step, as `statectl size THREAD`; the
    same page whichever step is selected; S again: back to the state."""
    want = run("size", "bakery-plan", "--db", str(dbs["agent"]), "--json").out
    import json

    channels = json.loads(want)["channels"]
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        text = doc_text(app)
        assert "bytes of this thread" in str(app.screen.query_one("#where", Static).render())
        assert "CHANNEL" in text
        assert "checkpoint size per step" in text
        assert all(c["channel"] in text for c in channels if not c["channel"].startswith(("__", "branch:")))
        await pilot.press("j", "j")
        await settle(pilot)
        assert doc_text(app) == text
        await pilot.press("S")
        await settle(pilot)
        assert "CHANNEL" not in doc_text(app)
        assert "messages" in doc_text(app)
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SMALL) as pilot:  # 80x24: channel names whole, bytes kept
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        lines = doc_text(app).splitlines()
        head = next(i for i, x in enumerate(lines) if x.startswith("CHANNEL"))
        names = []
        for line in lines[head + 1 :]:
            if not line.strip() or line.startswith("("):
                break
            names.append(line.split()[0])
        assert "materialized_business_idea" in names
        assert "hitl_edited_tool_calls" in names
        said = " ".join(lines)
        assert "left out at" in said
        assert "a pipe" not in said  # (the TUI's own words: a wider window)
        assert "…" not in "".join(names)


async def test_at_80x24_the_footer_shows_quit_and_keys_first(dbs):
    """The footer was cut to `g Grap` at 80 columns, hiding `q` and `?`: they now come first,
    and on the thread, threads and graph screens every key the footer lists fits."""
    from textual.widgets._footer import FooterKey

    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for screen in ("thread", "graph", "threads"):
            if screen == "graph":
                await pilot.press("g")
            elif screen == "threads":
                await pilot.press("escape", "escape")
            await settle(pilot)
            await pilot.pause(0.1)
            keys = list(app.screen.query(FooterKey))
            assert [k.key for k in keys[:2]] == ["q", "question_mark"], screen
            assert all(k.region.right <= SMALL[0] for k in keys), (screen, [(k.key, k.region) for k in keys])
            assert all(k.region.width > 0 for k in keys), screen


async def test_threads_screen_preview_where_it_fits_and_ids_never_cut(dbs):
    """The threads screen shows the PREVIEW column where it fits (200 columns), leaves it out
    before anything else at 80; a thread id too wide for the screen folds onto a second line of
    its row (it was cut in the middle, `f23721b5-3a…`)."""
    from textual.widgets import DataTable

    async with make_app(str(dbs["agent"]), poll=0).run_test(size=LARGE) as pilot:
        await settle(pilot)
        table = pilot.app.screen.query_one(DataTable)
        keys = [str(c.key.value) for c in table.ordered_columns]
        assert keys[-1] == "preview"
        previews = [str(table.get_row_at(r)[-1]) for r in range(table.row_count)]
        assert any("I want to open a bakery in Lisbon" in p for p in previews), previews
    async with make_app(str(dbs["agent"]), poll=0).run_test(size=(32, 24)) as pilot:
        await settle(pilot)
        table = pilot.app.screen.query_one(DataTable)
        keys = [str(c.key.value) for c in table.ordered_columns]
        assert "preview" not in keys
        assert "updated" not in keys  # (the time gives way before the counts)
        ids = [str(table.get_row_at(r)[0]) for r in range(table.row_count)]
        assert sorted(i.replace("\n", "") for i in ids) == sorted(str(k.value) for k in table.rows)
        assert "…" not in "".join(ids)
        assert any("\n" in i for i in ids)  # (folded at this width)
