"""What the state pane shows, as foldable sections of Rich renderables (built in a worker).

No Textual here: the sections are plain data, so the same pages can be built off the UI thread
and tested without an app.
"""

from __future__ import annotations

from typing import Any

import orjson
from rich.padding import Padding
from rich.text import Text

from statectl.diff import Diff
from statectl.model import Snapshot
from statectl.render.diff import diff_view
from statectl.render.state import header, special_view
from statectl.render.values import scalar, summary, value_tree
from statectl.tui.widgets.document import Section

MODES = ("state", "diff", "json")


def _note(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} items"
    if isinstance(value, dict):
        return f"{len(value)} keys"
    return summary(value, 60)


def _body(key: str, value: Any) -> Any:
    special = special_view(value)
    if special is not None:
        return special[1]
    tree = value_tree(key, value)
    tree.hide_root = isinstance(value, (dict, list)) and bool(value)  # the section title names it
    return tree


def state_page(snap: Snapshot) -> list[Section]:
    """The checkpoint header (next, interrupts, errors), then one section per state key."""
    sections = [Section(None, header(snap))]
    values = snap.values
    if not isinstance(values, dict):
        sections.append(Section("return value", _body("return value", values), note=_note(values)))
    elif not values:
        sections.append(Section(None, Text("(no state values at this checkpoint)", style="dim")))
    else:
        for key, value in values.items():
            if scalar(value) is not None or (isinstance(value, (list, dict)) and not value):
                sections.append(Section(None, value_tree(key, value)))  # one line: nothing to fold
            else:
                sections.append(Section(f"{key}  ({_note(value)})", Padding(_body(key, value), (0, 0, 0, 2))))
    return sections


def diff_page(d: Diff) -> list[Section]:
    """What this checkpoint's step changed, and which node did it."""
    return [Section(None, diff_view(d))]


def json_page(snap: Snapshot) -> list[Section]:
    """The snapshot as `statectl show --json` prints it."""
    text = orjson.dumps(snap.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    return [Section(None, Text(text, no_wrap=False))]
