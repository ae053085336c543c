"""What happened after a checkpoint that stopped at an interrupt or an error (`show`'s `then`):
apart from `core.timeline`, whose log lines `show` does not need."""

from __future__ import annotations

from typing import TYPE_CHECKING

from statectl.core.state import decode_write
from statectl.model import NULL_TASK_ID

if TYPE_CHECKING:
    from statectl.core.state import ThreadView


def afterwards(view: ThreadView, checkpoint_id: str, interrupted: bool, failed: bool) -> str | None:
    """What happened after a checkpoint that stopped at an interrupt or an error, where it is
    not its branch's newest (None where it is: there the thread still waits, or stopped):
    `answered at step 4 with "yes"`, `retried at step 3`. An
    interrupt answered says with what: the resume value the resumed run saved on this
    checkpoint (`Command(resume=...)`); an error says where the run went on (a retry)."""
    kids = [view.record(k) for k in view.children().get(checkpoint_id, ())]
    if not kids or not (interrupted or failed):
        return None
    first = min(kids, key=lambda r: r.checkpoint_id)  # the earliest continuation
    at = "?" if first.step is None else str(first.step)
    others = f" ({len(kids)} branches go on from here)" if len(kids) > 1 else ""
    if failed:
        return f"retried at step {at}{others}"
    resumes = [w for w in view.writes(checkpoint_id) if w.channel == "__resume__"]
    given = [w for w in resumes if w.task_id == NULL_TASK_ID]  # Command(resume=value) as given
    answer: object = _MISSING
    if given:
        answer = decode_write(given[-1])
    elif resumes:  # only the task's own list of answers, one per interrupt it raised
        values = decode_write(resumes[-1])
        answer = values[-1] if isinstance(values, list) and values else values
    if answer is _MISSING:
        how = "updated" if first.source == "update" else "went on"
        return f"{how} at step {at} without an answer saved{others}"
    return f"answered at step {at} with {answer_text(answer)}{others}"


_MISSING = object()


def answer_text(value: object, limit: int = 120) -> str:
    """A resume value on one line: a text quoted, anything else as JSON."""
    import json

    from statectl.core.text import fold

    text = json.dumps(value, ensure_ascii=False, default=str)
    return fold(" ".join(text.split()), limit)
