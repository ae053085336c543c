"""`replay --offline`: the recording read from the data, how the run ended (a divergence, exit 3),
and `--check` / `--expect` (a thread as a regression test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from statectl.cli.output import emit, emit_json, error_text
from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.core.recording import Recording
    from statectl.core.state import ThreadView
    from statectl.project.copy_fork_rerun import Target

DIVERGED = 3
"""Exit code of an offline run that left the recording."""


def recorded(view: ThreadView, checkpoint_id: str) -> Recording:
    """What the branch after `checkpoint_id` recorded; nothing recorded after it is bad input."""
    from statectl.core.recording import recording

    rec = view.record(checkpoint_id)
    found = recording(view, rec)
    if found.end_checkpoint_id == checkpoint_id:
        raise StatectlError(
            f"nothing was recorded after checkpoint {checkpoint_id} of thread {view.thread_id}: "
            "it is the newest of its branch, so an offline run has nothing to answer from",
            "give an earlier checkpoint (statectl log THREAD), or leave CHECKPOINT out: the thread's first",
        )
    return found


def say_live(answer: dict[str, Any]) -> None:
    new = answer.get("new_step")
    step = new if isinstance(new, int) else answer.get("step")  # (the new branch's own, as `log` shows it)
    ran = answer.get("checkpoint_id")
    where = (
        f"step {step} node {answer.get('node')}"
        + (f" in {answer['ns']}" if answer.get("ns") else "")
        + (f" (its task ran from checkpoint {ran[-12:]})" if isinstance(ran, str) else "")
    )
    typer.echo(
        f"statectl: the run left the recording at {error_text(where)}: going on live from there "
        "(--live-after-divergence: models are called, tools act)",
        err=True,
    )


def system_line(note: dict[str, Any]) -> str:
    where = f"node {note.get('node')}" + (f" in {note['ns']}" if note.get("ns") else "")
    return (
        f"{where} sends a system message ({note.get('system')!r}) that is not in the recording: "
        "a change to it cannot be detected offline (it is not compared)"
    )


def say_system(note: dict[str, Any]) -> None:
    """Said once for each node, as the run makes its first call."""
    typer.echo(f"statectl: note: {error_text(system_line(note))}", err=True)


def finish(
    target: Target, end: dict[str, Any], found: Recording, check: bool, expected: dict[str, Any], json: bool
) -> int:
    """How the offline run ended, and its exit code: 3 it left the recording, 1 it ended in an
    error or a check failed, else 0."""
    import statectl
    from statectl.core.recording import regenerated_ids

    report = end.get("diverged")
    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        snap = view.snapshot(view.records[0].checkpoint_id)
        original = view.snapshot(found.end_checkpoint_id)
    status = "error" if end.get("failure") else "interrupted" if (snap.interrupts or snap.next) else "done"
    if report is not None and not end.get("live"):
        status = "diverged"
    failed: list[str] = []
    the_diff = None
    if status not in ("diverged", "error") and check:
        from dataclasses import replace

        from statectl.core.diff import diff_snapshots

        mine = replace(
            snap,
            values=regenerated_ids(original.values, snap.values),
            interrupts=_same_interrupts(original.interrupts, snap.interrupts),
        )
        the_diff = diff_snapshots(original, mine, (f"the original branch ends at {found.end_checkpoint_id}",))
        if the_diff.has_changes or not the_diff.compared:
            failed.append("check")
    misses = expect_misses(snap.values, expected)
    if status not in ("diverged", "error") and misses:
        failed.append("expect")
    if json:
        emit_json(
            {
                "thread_id": target.thread_id,
                "to": target.label,
                "status": status,
                "checkpoint_id": snap.checkpoint_id,
                "original_checkpoint_id": found.end_checkpoint_id,
                "next": list(snap.next),
                "failure": end.get("failure"),
                "diverged": report,
                "live": bool(end.get("live")),
                "answered": end.get("answered"),
                "unverified": end.get("unverified") or [],
                "system_unchecked": end.get("system_unchecked") or [],
                "check": None
                if not check or status == "diverged"
                else False
                if the_diff is None
                else not the_diff.has_changes and the_diff.compared,
                "diff": the_diff.to_json() if the_diff is not None and "check" in failed else None,
                "expect": _expect_json(expected, misses, status) if expected else None,
            }
        )
    else:
        _human(target, end, snap, status, report, the_diff, failed, expected, misses, check)
    if status == "diverged":
        return DIVERGED
    return 1 if status == "error" or failed else 0


def _same_interrupts(original: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    """`new` with the ids of the original's interrupts that ask the same (a re-run makes new ids)."""
    from dataclasses import replace

    return tuple(
        replace(b, id=a.id) if i < len(original) and (a := original[i]).value == b.value else b
        for i, b in enumerate(new)
    )


def _human(
    target: Target,
    end: dict[str, Any],
    snap: Any,
    status: str,
    report: dict[str, Any] | None,
    the_diff: Any,
    failed: list[str],
    expected: dict[str, Any],
    misses: dict[str, Miss],
    check: bool,
) -> None:
    from statectl.render.offline import divergence_view
    from statectl.render.rerun import outcome_view

    if report is not None:
        emit(divergence_view(report), lines=True)
    if status != "diverged":
        emit(outcome_view(target.thread_id, target.label, status, snap, end.get("failure")), lines=True)
    answered = end.get("answered") or {}
    counts = ", ".join(f"{n} {k}{'s' * (n != 1)}" for k, n in answered.items() if n)
    typer.echo(f"statectl: answered from the recording: {counts or 'nothing'}", err=True)
    for where in end.get("unverified") or []:
        typer.echo(
            f"statectl: note: {error_text(where)}: the node made its own prompt and kept none of it in the "
            "state: answered by its place, the request not compared",
            err=True,
        )
    if status in ("diverged", "error") and (the_diff is not None or expected or check):
        verdict = (
            "not checked: the run left the recording (exit 3)"
            if status == "diverged"
            else f"failed: the new branch ended in an error ({end.get('failure')})"
        )
        for flag in ("--check",) * check + ("--expect",) * bool(expected):
            typer.echo(f"statectl: {flag}: {error_text(verdict)}", err=True)
    if the_diff is not None and "check" in failed:
        from statectl.render.diff import diff_view

        typer.echo("statectl: --check: the new branch does not end as the original did", err=True)
        emit(diff_view(the_diff), lines=True)
    elif the_diff is not None:
        typer.echo("statectl: --check: the new branch ends as the original did", err=True)
    if check and status != "diverged":
        for note in end.get("system_unchecked") or []:
            typer.echo(f"statectl: --check: not compared: {error_text(system_line(note))}", err=True)
    if "expect" in failed:
        say_misses(expected, misses)


def expectations(target: Target, expected: dict[str, Any], json: bool) -> int:
    """`--expect` after a replay that is not offline: 1 when a key's final value differs."""
    import statectl

    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        snap = view.snapshot(view.records[0].checkpoint_id)
    misses = expect_misses(snap.values, expected)
    say_misses(expected, misses)
    return 1 if misses else 0


# -- --expect KEY=JSON: a key (or a path into it) of the branch's final state ---------------------
@dataclass(frozen=True)
class Miss:
    """An `--expect` that does not hold: the value found, or why there is none (`missing`)."""

    got: Any = None
    missing: str | None = None


def expect_misses(values: Any, expected: dict[str, Any]) -> dict[str, Miss]:
    """The `--expect` keys whose final value is not the one expected. A key is a state key, or a
    path into it: `structured_response.score`, `messages.-1.content` (a number indexes a list,
    from the end when negative; a message or an object is looked into by its fields)."""
    out: dict[str, Miss] = {}
    for key, want in expected.items():
        found, got, missing = lookup(values if isinstance(values, dict) else {}, key)
        if not found:
            out[key] = Miss(missing=missing)
        elif not (got == want or plain(got) == want):
            out[key] = Miss(got=got)
    return out


def lookup(values: dict[str, Any], key: str) -> tuple[bool, Any, str | None]:
    """(found, value, why not) of an `--expect` key: the state key itself, else a dotted path."""
    import difflib

    if key in values:
        return True, values[key], None
    value: Any = values
    parts = key.split(".")
    for n, part in enumerate(parts):
        where = ".".join(parts[:n]) or "the final state"
        if isinstance(value, dict) and part not in value and _wrapped(value):
            value = value["data"]  # (a message or an object: its fields)
        if isinstance(value, dict):
            if part in value:
                value = value[part]
                continue
            names = [str(k) for k in value if not str(k).startswith("$")]
            near = difflib.get_close_matches(part, names, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(near)}?" if near else f" (its keys: {_names(names)})"
            return False, None, f"no key {part!r} in {where}{hint}"
        if isinstance(value, list):
            try:
                index = int(part)
            except ValueError:
                return False, None, f"{where} is a list: {part!r} is not an index (a number: 0, -1)"
            if not -len(value) <= index < len(value):
                return False, None, f"no item {index} in {where} (a list of {len(value)})"
            value = value[index]
            continue
        return False, None, f"{where} is {type(value).__name__ if value is not None else 'null'}: it has no {part!r}"
    return True, value, None


def _wrapped(value: dict[str, Any]) -> bool:
    return "$type" in value and isinstance(value.get("data"), dict)


def plain(value: Any, depth: int = 0) -> Any:
    """A decoded value without statectl's type wrappers (`{"$type": ..., "data": {...}}` -> its
    fields): what a JSON --expect value compares with."""
    if depth > 100:
        return value
    if isinstance(value, dict):
        if _wrapped(value):
            return plain(value["data"], depth + 1)
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, depth + 1) for v in value]
    return value


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return (shown + f", … ({len(names)} in all)" if len(names) > limit else shown) or "none"


def shown(value: Any, limit: int = 300) -> str:
    """A value as one bounded line (a messages list folded as `show` folds a long value)."""
    import json

    from statectl.core.text import fold

    return fold(json.dumps(value, ensure_ascii=False, default=str), limit)


def say_misses(expected: dict[str, Any], misses: dict[str, Miss]) -> None:
    for key, miss in misses.items():
        if miss.missing is not None:
            text = f"--expect {key}: {miss.missing}"
        else:
            text = f"--expect {key}: expected {shown(expected[key])}, got {shown(miss.got)}"
        typer.echo(f"statectl: {error_text(text)}", err=True)


def _expect_json(expected: dict[str, Any], misses: dict[str, Miss], status: str) -> dict[str, Any]:
    if status in ("diverged", "error"):
        return {k: {"expected": v, "checked": False} for k, v in expected.items()}
    return {
        k: {"expected": expected[k], **({"missing": m.missing} if m.missing is not None else {"got": m.got})}
        for k, m in misses.items()
    }
