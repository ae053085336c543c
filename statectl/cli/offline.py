"""`replay --offline`: the recording read from the data, how the run ended (a divergence, exit 3),
and `--check` / `--expect` (a thread as a regression test)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from statectl.cli.output import emit, emit_json, error_text
from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.core.recording import Recording
    from statectl.core.state import ThreadView
    from statectl.project.timetravel import Target

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
    step, new = answer.get("step"), answer.get("new_step")
    moved = f" (the new branch's step {new})" if new is not None and new != step else ""
    where = f"step {step}{moved} node {answer.get('node')}" + (f" in {answer['ns']}" if answer.get("ns") else "")
    typer.echo(
        f"statectl: the run left the recording at {error_text(where)}: going on live from there "
        "(--live-after-divergence: models are called, tools act)",
        err=True,
    )


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
    values = snap.values if isinstance(snap.values, dict) else {}
    misses = {k: values.get(k) for k, v in expected.items() if values.get(k, _ABSENT) != v}
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
                "check": None if not check or the_diff is None else not the_diff.has_changes and the_diff.compared,
                "diff": the_diff.to_json() if the_diff is not None and "check" in failed else None,
                "expect": {k: {"expected": expected[k], "got": misses.get(k)} for k in misses} if expected else None,
            }
        )
    else:
        _human(target, end, snap, status, report, the_diff, failed, expected, misses)
    if status == "diverged":
        return DIVERGED
    return 1 if status == "error" or failed else 0


_ABSENT = object()


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
    misses: dict[str, Any],
) -> None:
    from statectl.render.offline import divergence_view
    from statectl.render.travel import outcome_view

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
    if the_diff is not None and "check" in failed:
        from statectl.render.diff import diff_view

        typer.echo("statectl: --check: the new branch does not end as the original did", err=True)
        emit(diff_view(the_diff), lines=True)
    elif the_diff is not None:
        typer.echo("statectl: --check: the new branch ends as the original did", err=True)
    for key, got in misses.items() if "expect" in failed else ():
        import json

        typer.echo(
            f"statectl: --expect {error_text(key)}: expected {error_text(json.dumps(expected[key]))}, "
            f"got {error_text(json.dumps(got, default=str))}",
            err=True,
        )


def expectations(target: Target, expected: dict[str, Any], json: bool) -> int:
    """`--expect` after a replay that is not offline: 1 when a key's final value differs."""
    import statectl

    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        snap = view.snapshot(view.records[0].checkpoint_id)
    values = snap.values if isinstance(snap.values, dict) else {}
    misses = {k: values.get(k) for k, v in expected.items() if values.get(k, _ABSENT) != v}
    import json as jsonlib

    for key, got in misses.items():
        typer.echo(
            f"statectl: --expect {error_text(key)}: expected {error_text(jsonlib.dumps(expected[key]))}, "
            f"got {error_text(jsonlib.dumps(got, default=str))}",
            err=True,
        )
    return 1 if misses else 0
