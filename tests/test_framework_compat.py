"""The framework internals statectl relies on (statectl/cli/typer_compat.py,
statectl/tui/textual_compat.py) are still there: a Typer or Textual release that renames one fails
here, by name, instead of silently costing start-up time or showing a traceback."""

from __future__ import annotations

import pytest
from parity import SAMPLES


def test_typer_internals_exist():
    from typer import _coercion, core, rich_utils

    assert hasattr(core, "_TyperParameter")
    assert callable(core._TyperParameter.get_runtime_param)
    assert hasattr(_coercion, "RuntimeParam")
    assert hasattr(rich_utils, "escape_before_html_export")
    assert callable(core.TyperArgument.__init__)
    for cls, name in (
        (core._TyperParameter, "display_name_raw"),
        (core.TyperArgument, "_usage_display_name"),
        (core.TyperArgument, "display_type_rich"),
        (core.TyperOption, "display_type_rich"),
        (core.TyperOption, "_get_number_range_help_str"),
    ):
        assert hasattr(cls, name), f"Typer's {cls.__name__}.{name} is gone (typer_compat.word_metavars)"


def test_typer_plain_values_are_in_force():
    """statectl converts its plain values itself: the patched runtime parameter is installed (Typer
    0.2x would otherwise build a pydantic adapter per parameter)."""
    from typer import core

    import statectl.cli  # noqa: F401 (installs the patch)

    assert core._TyperParameter.get_runtime_param.__module__ == "statectl.cli.typer_compat"


def test_typer_help_keeps_argument_help(run):
    r = run("show", "--help")
    assert r.code == 0
    assert "CHECKPOINT: an id" in r.out
    assert "\\[" not in r.out


COMMANDS = ["", "threads", "log", "show", "diff", "export", "schema", "graph", "size", "prune", "tui", "copy"]
COMMANDS += ["fork", "replay", "migrate"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_values_in_words(run, command):
    """Help names what the user types (THREAD, CHECKPOINT, N, KEY=VALUE, DURATION), not Python
    types (`<str>`, `<int range>`, `<list[str]>`, `{thread_id}`, `[x>=0]`)."""
    import re

    r = run(*([command] if command else []), "--help")
    assert r.code == 0, r.err
    assert not re.search(r"<(str|int|float|path|list\[str\])[^>]*>|\{\w+\}|\[x[<>]=", r.out), r.out
    if command in ("log", "show", "diff", "fork", "replay"):
        assert re.search(r"Usage: statectl \w+ \[OPTIONS\] THREAD", r.out), r.out
    if command == "threads":
        for words in ("--limit N", "--after THREAD", "--meta KEY=VALUE", "--older-than DURATION", "--db DB"):
            assert words in r.out
    if command == "":
        assert "--debug" in r.out
        assert "--no-pager" in r.out


def test_a_missing_argument_is_named_as_help_names_it(run):
    r = run("show")
    assert r.code == 2
    assert r.err == "statectl: Missing argument 'THREAD'.\n"


@pytest.mark.parametrize("owner", ["App", "DataTable"])
def test_textual_private_methods_exist(owner):
    from statectl.tui.textual_compat import PRIVATE

    cls = next(c for c in PRIVATE if c.__name__ == owner)
    for name in PRIVATE[cls]:
        assert callable(getattr(cls, name, None)), f"Textual's {owner}.{name} is gone"


async def test_textual_private_state_exists():
    from statectl.tui import make_app
    from statectl.tui.textual_compat import PRIVATE_STATE
    from statectl.tui.widgets.rows import Rows

    app = make_app(str(SAMPLES / "agent.sqlite"), poll=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(Rows)
        for name in PRIVATE_STATE["App"]:
            assert hasattr(app, name), f"Textual's App.{name} is gone"
        for name in PRIVATE_STATE["DataTable"]:
            assert hasattr(table, name), f"Textual's DataTable.{name} is gone"
        await pilot.press("q")
