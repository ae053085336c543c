"""What the state pane shows, as foldable sections of Rich renderables (built in a worker).

No Textual here: the sections are plain data, so the same pages can be built off the UI thread
and tested without an app.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text

from statectl.core.diff import Diff
from statectl.model import Snapshot

if TYPE_CHECKING:
    from statectl.core.size import ThreadChannels
from statectl.render import Limits
from statectl.render.diff import diff_view
from statectl.render.safe import safe_lines
from statectl.render.state import header, inferred_note, special_view
from statectl.render.values import branches, leaf_line, scalar, summary


@dataclass
class Section:
    """One foldable block: a title line (None: no title, not foldable) and its body (None:
    none). Sections form an outline by `depth`: folding one hides the deeper sections after it
    (a nested value folds on its own)."""

    title: str | None
    body: RenderableType | None
    folded: bool = False
    note: str = ""
    """Shown after the title when folded (a one-line summary)."""
    depth: int = 0
    key: str | None = None
    """What a fold is remembered by across checkpoints (default: the title)."""
    lines: list[list[Segment]] = field(default_factory=list)
    width: int = 0
    """The width `lines` were rendered at (0: not yet)."""


def lay_out(sections: list[Section], console: Console, width: int) -> None:
    """Render each section's body to strips at `width` (safe in a worker thread: rendering
    only reads the console's options)."""
    options = console.options.update(width=width, height=None, highlight=False)
    for s in sections:
        if s.width != width:
            s.lines = (
                []
                if s.body is None
                else safe_lines(console, s.body, options.update_width(max(10, width - 2 * s.depth)))
            )
            s.width = width


MODES = ("state", "diff", "json", "size")


def _note(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} items"
    if isinstance(value, dict):
        return f"{len(value)} keys"
    return summary(value, 60)


def _preview(children: list[tuple[str, Any]], limit: int = 70) -> str:
    """What a folded section shows after its title: its first one-line children."""
    parts = [f"{label}: {summary(v, 30)}" for label, v in children if scalar(v) is not None]
    text = ", ".join(parts[:4]) or f"{len(children)} entries"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _outline(label: str, value: Any, out: list[Section], depth: int = 0, path: str = "") -> None:
    """A structured value as nested foldable sections: each list, dict or object its own
    section (titled with its label and kind), its one-line children gathered between them."""
    kind, children = branches(value) or ("", [])
    path = f"{path}/{label}" if path else label
    title = f"{label}  ({_note(value) if depth == 0 else kind})"
    out.append(Section(title, None, depth=depth, key=path, note=_preview(children)))
    run: list[Text] = []

    def flush() -> None:
        if run:
            out.append(Section(None, Text("\n").join(run), depth=depth + 1))
            run.clear()

    shown = Limits.window(len(children))
    for child_label, child in children[:shown]:
        nested = None if scalar(child) is not None or depth >= 12 else branches(child)
        if nested is None:
            run.append(leaf_line(child_label, child))
        else:
            flush()
            _outline(child_label, child, out, depth + 1, path)
    if shown is not None:
        run.append(Text(f"… {len(children) - shown:,} more items ({Limits.hint} shows them)", style="dim"))
    flush()


def _key_sections(key: str, value: Any, out: list[Section]) -> None:
    """One state key: a line for a plain value, a section for a special view (transcript,
    todos, files), an outline of foldable sections for any other structure."""
    special = special_view(value)
    if special is not None:
        out.append(Section(f"{key}  ({_note(value)})", Padding(special[1], (0, 0, 0, 2))))
    elif scalar(value) is not None or branches(value) is None:
        out.append(Section(None, leaf_line(key, value)))  # one line: nothing to fold
    else:
        _outline(key, value, out)


def state_page(snap: Snapshot) -> list[Section]:
    """The checkpoint header (next, interrupts, errors), then each state key's sections."""
    sections = [Section(None, header(snap))]
    values = snap.values
    if not isinstance(values, dict):
        _key_sections("return value", values, sections)
    elif not values:
        sections.append(Section(None, Text("(no state values at this checkpoint)", style="dim")))
    else:
        for key, value in values.items():
            if key in snap.inferred:  # (always an empty collection: one line)
                sections.append(Section(None, Text.assemble(leaf_line(key, value), inferred_note())))
            else:
                _key_sections(key, value, sections)
    return sections


def diff_page(d: Diff) -> list[Section]:
    """What this checkpoint's step changed, and which node did it."""
    return [Section(None, diff_view(d))]


def size_page(channels: ThreadChannels) -> list[Section]:
    """`S`: where the thread's bytes go, by channel, and its checkpoint size per step (what
    `statectl size THREAD` prints)."""
    from statectl.render.size import thread_view

    return [Section(None, thread_view(channels))]


def json_page(snap: Snapshot) -> list[Section]:
    """The snapshot as `statectl show --json` prints it."""
    from statectl.codec.jsonout import json_bytes

    try:
        text = orjson.dumps(snap.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):  # (nested too deep, or an integer beyond 64 bits)
        text = orjson.dumps(orjson.loads(json_bytes(snap.to_json())), option=orjson.OPT_INDENT_2).decode()
    return [Section(None, Text(text, no_wrap=False))]
