"""`statectl diff` and `log -p`: changes grouped by key, coloured +/−/~, writer beside each."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from statectl.core.diff import ROOT_KEY, Diff, KeyChange, MessageChange, PathChange
from statectl.core.js import error_text
from statectl.model import Snapshot
from statectl.render import Limits

if TYPE_CHECKING:
    from statectl.core.state import ThreadView
from statectl.render.tables import short_id
from statectl.render.values import message_row, scalar

MARK = {
    "added": ("+", "green"),
    "removed": ("-", "red"),
    "changed": ("~", "yellow"),
    "edited": ("~", "yellow"),
    "add": ("+", "green"),
    "remove": ("-", "red"),
    "replace": ("~", "yellow"),
}
MAX_PATHS = 30
MAX_TEXT_LINES = 60


def _indent(renderable: RenderableType, pad: tuple[int, int, int, int]) -> Padding:
    return Padding(renderable, pad, expand=False)


def brief(value: Any, limit: int = 160, count: bool = True) -> Text:
    """A value on one line: styled scalars, compact JSON for structure; past `limit` characters
    shortened with a note of how much, unless `--full` (`count`: False for a layout tried, not
    yet printed)."""
    if isinstance(value, str) and ("\n" in value or len(value) > limit):
        return Text(repr(Limits.shorten(value, limit, count)), style="green")
    leaf = scalar(value)
    if leaf is not None:
        return leaf
    from statectl.codec.jsonout import json_bytes

    text = json_bytes(value).decode()  # (never fails: a value nested too deep for orjson included)
    return Text(Limits.shorten(text, limit, count))


def _is_text(before: Any, after: Any) -> bool:
    """Long or multi-line strings (or lists of lines) read best as a unified diff."""

    def texty(v: Any) -> bool:
        return isinstance(v, str) and ("\n" in v or len(v) > 120)

    if isinstance(before, str) and isinstance(after, str):
        return texty(before) or texty(after)
    return (
        isinstance(before, list)
        and isinstance(after, list)
        and len(before) + len(after) > 2
        and all(isinstance(x, str) for x in (*before, *after))
    )


WORD_CONTEXT = 8
"""Words kept on each side of a change in a word diff (git diff --word-diff shows the line)."""
LONG_LINE = 120
"""A changed line longer than this is shown as a word diff: its change, not its first screen."""


def word_diff(before: str, after: str, context: int = WORD_CONTEXT) -> Text:
    """The words that changed between two texts, as `git diff --word-diff=plain` marks them
    (`[-removed-]{+added+}`, coloured too, so a pipe reads them), with `context` words around
    each change and `…` for what is left out between: a change at the end of a 300-word text is
    shown, however wide the screen."""
    import difflib
    import re

    a, b = re.findall(r"\s+|\S+", before), re.findall(r"\s+|\S+", after)
    out = Text()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            same = a[i1:i2]
            words = [k for k, t in enumerate(same) if not t.isspace()]
            head = n > 0  # context after the change before, and before the change after
            tail = n < len(ops) - 1
            if len(words) <= context * (head + tail) + 1:
                out.append("".join(same), style="dim")
                continue
            if head:
                out.append("".join(same[: words[context - 1] + 1]), style="dim")
            out.append(" … " if head and tail else "… " if tail else " …", style="dim")
            if tail:
                out.append("".join(same[words[-context] :]), style="dim")
            continue
        if i2 > i1:
            out.append(f"[-{''.join(a[i1:i2])}-]", style="bold red")
        if j2 > j1:
            out.append(f"{{+{''.join(b[j1:j2])}+}}", style="bold green")
    return out


def text_diff(before: Any, after: Any) -> Text:
    """A unified diff of two texts (or two lists of lines), coloured; a text on one line, or a
    long line changed for another, as a word diff (`word_diff`)."""
    if isinstance(before, str) and isinstance(after, str) and "\n" not in before + after:
        return word_diff(before, after)
    a = before.splitlines() if isinstance(before, str) else [str(x) for x in before]
    b = after.splitlines() if isinstance(after, str) else [str(x) for x in after]
    import difflib

    out = Text()
    lines = list(difflib.unified_diff(a, b, "before", "after", n=2, lineterm=""))[2:]
    shown = lines[:MAX_TEXT_LINES]
    k = 0
    while k < len(shown):
        line = shown[k]
        pair = shown[k + 1] if k + 1 < len(shown) else ""
        if line.startswith("-") and pair.startswith("+") and max(len(line), len(pair)) > LONG_LINE:
            out.append("~", style="yellow")
            out.append_text(word_diff(line[1:], pair[1:]))
            out.append("\n")
            k += 2
            continue
        style = (
            "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        out.append(line + "\n", style=style)
        k += 1
    if len(lines) > MAX_TEXT_LINES:
        out.append(f"… {len(lines) - MAX_TEXT_LINES} more diff lines\n", style="dim")
    out.rstrip()
    return out


def _change_line(mark: str, style: str, label: str, before: Any, after: Any, op: str) -> RenderableType:
    head = Text.assemble((f"{mark} ", style), (label, "bold") if label else "")
    if op in ("added", "add"):
        return Text.assemble(head, ": " if label else "", brief(after))
    if op in ("removed", "remove"):
        return Text.assemble(head, ": " if label else "", Text(brief(before).plain, style="red strike"))
    if _is_text(before, after):
        return Group(head, _indent(text_diff(before, after), (0, 0, 0, 4)))
    a, b = brief(before, 70, count=False), brief(after, 70, count=False)
    if len(a) + len(b) < 110:
        return Text.assemble(head, ": " if label else "", brief(before, 70), (" → ", "bold"), brief(after, 70))
    return Group(
        head, Text.assemble(("    - ", "red"), brief(before)), Text.assemble(("    + ", "green"), brief(after))
    )


def _message_lines(changes: tuple[MessageChange, ...]) -> RenderableType:
    lines: list[RenderableType] = []
    shown = Limits.window(len(changes))
    for m in changes[:shown]:
        mark, style = MARK[m.op]
        label, text = message_row(m.after if m.op != "removed" else m.before, limit=300)
        if m.op == "removed":
            text.stylize("strike")
        note = f"[{m.index}]" + (" edited" if m.op == "edited" else "")
        lines.append(Text.assemble((f"{mark} {note} ", style), label, " ", text))
    if shown is not None:
        lines.append(Text(f"… {len(changes) - shown:,} more messages ({Limits.hint} shows them)", style="dim"))
    return Group(*lines)


def key_block(c: KeyChange) -> RenderableType:
    mark, style = MARK[c.op]
    name = c.key if c.key != ROOT_KEY else "return value"
    title = Text.assemble((f"{mark} ", style), (name, "bold " + style))
    body: RenderableType | None = None
    if c.messages is not None:
        body = _message_lines(c.messages)
    elif c.op in ("added", "removed"):
        value = brief(c.after if c.op == "added" else c.before, 60, count=False)
        if len(value) < 60 and "\n" not in value.plain:
            value = brief(c.after if c.op == "added" else c.before, 60)
            title.append(": ")
            title.append_text(Text(value.plain, style="red strike") if c.op == "removed" else value)
        else:
            body = _change_line(mark, style, "", c.before, c.after, c.op)
    elif len(c.paths) == 1 and c.paths[0].path == c.pointer:
        a, b = brief(c.before, 50, count=False), brief(c.after, 50, count=False)
        if (
            len(name) + len(a) + len(b) + 6 * len(c.by) < 90
            and not _is_text(c.before, c.after)
            and "\n" not in a.plain + b.plain
        ):
            title.append_text(Text.assemble(": ", brief(c.before, 50), (" → ", "bold"), brief(c.after, 50)))
        else:
            body = _change_line(mark, style, "", c.before, c.after, "changed")
    else:
        lines: list[RenderableType] = [_path_line(p, c.pointer) for p in c.paths[:MAX_PATHS]]
        if len(c.paths) > MAX_PATHS:
            lines.append(Text(f"… {len(c.paths) - MAX_PATHS} more changed paths", style="dim"))
        body = Group(*lines)
    if c.by:
        title.append(f"   by {', '.join(c.by)}", style="dim")
    if c.steps and len(c.steps) > 1:
        title.append(f" ({len(c.steps)} steps)", style="dim")
    return title if body is None else Group(title, _indent(body, (0, 0, 0, 4)))


def readable(pointer: str) -> str:
    """A JSON Pointer as an accessor a person reads at a glance: `["/plan.md"].content`, `[0].status`."""
    out = []
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if token.isdigit():
            out.append(f"[{token}]")
        elif token.isidentifier():
            out.append(f".{token}")
        else:
            out.append(f"[{orjson.dumps(token).decode()}]")
    return "".join(out).lstrip(".")


def _path_line(p: PathChange, base: str) -> RenderableType:
    mark, style = MARK[p.op]
    rel = p.path[len(base) :] if p.path.startswith(base) else p.path
    return _change_line(mark, style, readable(rel) or "(whole value)", p.before, p.after, p.op)


def _interrupts(snap: Snapshot | None) -> list[str]:
    return [brief(i.value, 160).plain for i in snap.interrupts] if snap else []


def diff_header(d: Diff) -> Text:
    def at(s: Snapshot | None) -> Text:
        if s is None:
            return Text("(empty)", style="dim")
        return Text.assemble(f"step {s.step} ", (s.source or "", "bold"), (f" {short_id(s.checkpoint_id)}", "dim"))

    if d.a is not None and d.a.thread_id != d.b.thread_id:  # across threads: each side names its own
        head = Text.assemble(
            ("diff ", "bold"), f"{d.a.thread_id} ", at(d.a), (" → ", "bold"), f"{d.b.thread_id} ", at(d.b)
        )
    else:
        head = Text.assemble(
            ("diff ", "bold"),
            f"{d.b.thread_id}  ",
            *((f"ns {d.b.checkpoint_ns}  ",) if d.b.checkpoint_ns else ()),
            at(d.a),
            (" → ", "bold"),
            at(d.b),
        )
    if d.ran:
        head.append(f"   {'ran' if d.adjacent else 'ran between'}: ", style="dim")
        head.append(", ".join(d.ran), style="bold")
    return head


def diff_body(d: Diff) -> list[RenderableType]:
    """The changes of a diff, without the header (for `log -p`); bookkeeping channels when the
    diff was computed with them (`--internal`)."""
    parts: list[RenderableType] = [key_block(c) for c in d.changes]
    if d.next_changed:
        parts.append(
            Text.assemble(
                ("~ next ", "bold yellow"),
                (", ".join(d.next_before) or "(none)"),
                (" → ", "bold"),
                (", ".join(d.b.next) or "(done)"),
            )
        )
    if d.interrupts_changed:
        before, after = _interrupts(d.a), _interrupts(d.b)
        parts.extend(Text.assemble(("- interrupt ", "bold red"), v) for v in before if v not in after)
        parts.extend(Text.assemble(("+ interrupt ", "bold yellow"), (v, "yellow")) for v in after if v not in before)
    for t in d.b.errors:
        error = Limits.shorten(str(error_text(t.error)), 200)
        parts.append(Text.assemble(("! error ", "bold red"), f"{t.name}: ", (error, "red")))
    if d.internal:
        parts.append(Text("internal channels (version before → after):", style="dim bold"))
        for ch, va, vb in d.internal:
            parts.append(Text(f"  {ch}: {va} → {vb}", style="dim"))
    for note in d.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    return parts


def diff_view(d: Diff) -> RenderableType:
    body = diff_body(d)
    if not d.changes:
        body.insert(
            0,
            Text("no state changes", style="dim")
            if d.compared
            else Text("values not compared: a checkpoint could not be read", style="bold red"),
        )
    return Group(diff_header(d), *body)


def stream_log_patch(
    console: Any, view: ThreadView, ents: Iterable[Any], local: bool, wrote: Callable[[], object]
) -> list[Any]:
    """`log -p`: each step's line and its diff printed as it is ready (into a pipe too), newest
    first; `wrote()` is called after each step. The entries printed, in order."""
    from statectl.core.diff import step_diff
    from statectl.render.columns import natural_width
    from statectl.render.plain import Lines, plain_text
    from statectl.render.tables import log_line

    whole = not console.is_terminal  # into a pipe: a line per line, not wrapped at 80
    natural = natural_width(console)
    done = []
    for entry in ents:
        done.append(entry)
        body = diff_body(step_diff(view, entry.record))
        parts = [log_line(entry, local), *(Padding(part, (0, 0, 0, 4), expand=False) for part in body)]
        text = plain_text([*parts, Text("")]) if natural else None
        if text is not None:  # (into a pipe: the same lines, without Rich's layout)
            console.print(Lines(text), crop=False)
        else:
            for part in parts:
                console.print(part, soft_wrap=whole)
            console.print()
        console.file.flush()  # each step as it is ready, also into a pipe
        wrote()
    return done
