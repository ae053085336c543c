"""Time travel in the TUI: `f` forks at the selected checkpoint (the selected value edited as JSON),
`r` re-runs from it after showing what would run, `R` re-runs it offline (as `replay --offline`:
every answer from the thread's recording, after showing it). Both write into a copy of the thread (the
scratch file, as the CLI does) and the screen then shows that copy, the new branch appearing as
it is written; `d` on the new branch compares it with the old branch's head."""

from __future__ import annotations

import json
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from statectl.errors import StatectlError


class EditValue(ModalScreen[str | None]):
    """The selected value as JSON to edit: Ctrl+S forks with it, Esc leaves it."""

    BINDINGS = [Binding("ctrl+s", "save", "Fork with it"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.heading, self.text = title, text

    def compose(self) -> ComposeResult:
        with Vertical(id="travel-box"):
            yield Static(Text(self.heading, style="bold"), id="travel-title")
            yield TextArea(self.text, language=None, id="travel-text", show_line_numbers=False)
            yield Static(
                Text(
                    "Ctrl+S: fork with this value (a new checkpoint, LangGraph's update_state)   Esc: cancel",
                    style="dim",
                )
            )

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmRun(ModalScreen[bool]):
    """What a re-run would do (the dry run): Enter runs the graph's code, Esc does not."""

    BINDINGS = [Binding("enter", "run", "Run"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, plan: RenderableType, offline: bool = False) -> None:
        super().__init__()
        self.plan, self.offline = plan, offline

    def compose(self) -> ComposeResult:
        with Vertical(id="travel-box"):
            with VerticalScroll(id="travel-plan"):
                yield Static(self.plan)
            acts = (
                "models and tools answered from the recording, no network"
                if self.offline
                else "models are called, tools act"
            )
            yield Static(
                Text(f"Enter: re-run (this runs your graph's code: {acts})   Esc: cancel", style="bold yellow")
            )

    def action_run(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class TravelReady(Message):
    """The value to edit (f) or the plan to confirm (r), read in a worker."""

    def __init__(self, kind: str, checkpoint_id: str, payload: Any, key: str | None = None) -> None:
        super().__init__()
        self.kind, self.checkpoint_id, self.payload, self.key = kind, checkpoint_id, payload, key


def divergence_line(report: dict[str, Any]) -> str:
    """Where an offline re-run left the recording, in two lines: the step (the new branch's own)
    and the node; then why, and the first difference (word by word) or the detail."""
    from statectl.core.recording import content_text, word_diff

    step = report.get("new_step", report.get("step"))
    where = f"step {step} {report.get('node')}" + (f" in {report['ns']}" if report.get("ns") else "")
    why = str(report.get("why"))
    now, was = report.get("now"), report.get("recorded")
    if isinstance(now, dict) and isinstance(was, dict):
        diff = "".join(
            part if op == "=" else f"[-{part}-]" if op == "-" else f"{{+{part}+}}"
            for op, part in word_diff(content_text(was), content_text(now))
        )
        why += f": message {report.get('index')} ({now.get('role')}): {' '.join(diff.split())}"
    elif report.get("detail"):
        why += f": {' '.join(str(report['detail']).split())}"
    return f"{where}\n{why}"


class TravelWritten(Message):
    """A fork or re-run wrote into `spec` (now shown); `select`: the checkpoint to put the cursor on."""

    def __init__(
        self,
        spec: str,
        label: str,
        base: str,
        select: str | None,
        note: str,
        error: bool = False,
        diverged: tuple[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.spec, self.label, self.base, self.select, self.note, self.error = spec, label, base, select, note, error
        self.diverged = diverged
        """An offline re-run that left the recording: the checkpoint its task ran from (the row
        marked ✖) and why."""


class TravelMixin:
    """`f` and `r` for the thread screen (`self` is a `ThreadScreen`)."""

    branch_base: str | None = None
    """The old branch's head, once a fork or re-run made a new branch: `d` compares with it."""

    def _travel_ready(self: Any, what: str) -> str | None:
        app = self.app
        if app.store.graph is None:
            self.notify(
                f"{what} needs your graph: statectl tui --graph file.py:graph",
                severity="warning",
                timeout=8,
                markup=False,
            )
            return None
        from statectl.tui.widgets.timeline import Timeline

        return self.query_one(Timeline).selected

    def _selected_key(self: Any) -> str | None:
        from statectl.tui.widgets.document import Document

        doc = self.query_one(Document)
        if self.mode != "state" or doc.cursor is None:
            return None
        section = doc.sections[doc.cursor]
        name = section.key or (section.title or "").split("  ")[0]
        return name.split("/")[0] or None

    def action_fork(self: Any) -> None:
        checkpoint_id = self._travel_ready("f (fork)")
        if checkpoint_id is not None:
            self._read_value(checkpoint_id, self._selected_key())

    def action_rerun(self: Any) -> None:
        checkpoint_id = self._travel_ready("r (re-run)")
        if checkpoint_id is not None:
            self._read_plan(checkpoint_id)

    def action_rerun_offline(self: Any) -> None:
        checkpoint_id = self._travel_ready("R (re-run offline)")
        if checkpoint_id is not None:
            self._read_plan(checkpoint_id, True)

    @work(thread=True, exclusive=True, group="travel")
    def _read_value(self: Any, checkpoint_id: str, key: str | None) -> None:
        from statectl.project.copy_fork_rerun import run

        def read() -> Any:
            target = self._target(checkpoint_id)
            values = run(self.app.python, target.request(self.app.store.graph.target, "state"))["values"]
            return target, values

        got = self.app.read(self, f"the state at {checkpoint_id}", read)
        if got is None:
            return
        target, values = got
        if key is not None and isinstance(values, dict) and key in values:
            payload = (target, json.dumps(values[key], indent=2, ensure_ascii=False))
        else:
            key, payload = None, (target, json.dumps(values, indent=2, ensure_ascii=False))
        self.post_message(TravelReady("fork", checkpoint_id, payload, key))

    @work(thread=True, exclusive=True, group="travel")
    def _read_plan(self: Any, checkpoint_id: str, offline: bool = False) -> None:
        from rich.console import Group

        from statectl.core.recording import recording
        from statectl.core.rerun_plan import plan
        from statectl.render.offline import recording_view
        from statectl.render.rerun import plan_view

        def read() -> Any:
            view = self.view
            root = self.app.store.view(view.thread_id, "") if view.checkpoint_ns else None
            the_plan = plan(view, view.record(checkpoint_id), False, [], root)
            if not offline:
                return the_plan, None
            base = root or view
            found = recording(base, base.record(the_plan.start_checkpoint_id))
            if found.end_checkpoint_id == the_plan.start_checkpoint_id:
                raise StatectlError(f"nothing was recorded after checkpoint {checkpoint_id}: R needs an earlier one")
            return the_plan, found

        got = self.app.read(self, f"the plan from {checkpoint_id}", read)
        if got is not None:
            the_plan, found = got
            shown = plan_view(the_plan) if found is None else Group(plan_view(the_plan), recording_view(found))
            self.post_message(TravelReady("replay", checkpoint_id, (the_plan, shown, found)))

    def _target(self: Any, checkpoint_id: str) -> Any:
        """Where to write (the copy this screen shows once it made one; else the scratch file)."""
        from statectl.project.copy_fork_rerun import Target, prepare

        if self.app.travel_to is not None:  # (the store shown is that copy: write there)
            store = self.app.store
            return Target(
                self.app.travel_to, store.label, store.source.kind, self.thread_id, self.checkpoint_ns, checkpoint_id
            )
        return prepare(
            self.app.store,
            self.app.db_spec,
            self.thread_id,
            checkpoint_id,
            self.checkpoint_ns,
            self.app.travel_to,
            False,
            self.app.python,
            confirm=lambda q: None,
            say=lambda line: None,
        )

    def on_travel_ready(self: Any, message: TravelReady) -> None:
        if message.kind == "fork":
            target, text = message.payload
            what = f"value of {message.key}" if message.key else "state"
            title = f"fork thread {self.thread_id} at {message.checkpoint_id}: the {what} as JSON"

            def forked(edited: str | None) -> None:
                if edited is not None and edited != text:
                    self._write_fork(target, message.key, text, edited)
                elif edited is not None:
                    self.notify("unchanged: nothing written", timeout=4)

            self.app.push_screen(EditValue(title, text), forked)
        else:
            plan, shown, found = message.payload

            def confirmed(run: bool | None) -> None:
                if run:
                    self._write_replay(plan, found)

            self.app.push_screen(ConfirmRun(shown, found is not None), confirmed)

    @work(thread=True, exclusive=True, group="travel")
    def _write_fork(self: Any, target: Any, key: str | None, before: str, edited: str) -> None:
        from statectl.project.copy_fork_rerun import run

        try:
            value = json.loads(edited)
        except json.JSONDecodeError as exc:
            self.post_message(
                TravelWritten(
                    target.spec,
                    target.label,
                    "",
                    None,
                    f"not JSON (line {exc.lineno}: {exc.msg}): nothing written",
                    True,
                )
            )
            return
        if key is not None:
            values = {key: value}
        elif isinstance(value, dict):
            old = json.loads(before)
            values = {k: v for k, v in value.items() if k not in old or old[k] != v}
        else:
            values = None
        if not values:
            self.post_message(
                TravelWritten(target.spec, target.label, "", None, "no key changed: nothing written", True)
            )
            return
        base = self.view.records[0].checkpoint_id
        try:
            done = run(self.app.python, target.request(self.app.store.graph.target, "fork", values=values))
        except StatectlError as exc:
            self.post_message(TravelWritten(target.spec, target.label, "", None, str(exc), True))
            return
        new = done["checkpoint_id"]
        self.post_message(
            TravelWritten(target.spec, target.label, base, new, f"forked: new checkpoint {new} in {target.label}")
        )

    @work(thread=True, exclusive=True, group="travel")
    def _write_replay(self: Any, plan: Any, found: Any = None) -> None:
        from statectl.project.copy_fork_rerun import start

        def ready() -> Any:
            return self._target(plan.start_checkpoint_id)

        target = self.app.read(self, "a copy of the thread", ready)
        if target is None:
            return
        base = self.view.records[0].checkpoint_id
        self.post_message(
            TravelWritten(
                target.spec, target.label, base, None, f"re-running from {plan.start_checkpoint_id} in {target.label}"
            )
        )
        offline = {} if found is None else {"offline": "all", "recording": found.request()}
        writer = start(self.app.python, target.request(self.app.store.graph.target, "replay", **offline))
        end: dict[str, Any] = {}
        for answer in writer.answers():
            if "error" in answer:
                end = answer
                break
            if answer.get("done"):
                end = answer
        writer.proc.wait()
        if "error" in end or not end:
            error = end.get("error") or "the re-run stopped"
            self.post_message(TravelWritten(target.spec, target.label, base, None, error, True))
            return
        diverged = end.get("diverged")
        if diverged is not None and not end.get("live"):
            step, node = diverged.get("new_step", diverged.get("step")), diverged.get("node")
            note = f"re-run left the recording at step {step} ({node}): {diverged.get('why')}"
            detail = diverged.get("detail") or ""
            ran = diverged.get("checkpoint_id") if not diverged.get("ns") else None
            at = ran if isinstance(ran, str) else end.get("newest")  # (the row of the checkpoint its task ran from)
            self.post_message(
                TravelWritten(
                    target.spec,
                    target.label,
                    base,
                    at,
                    f"{note}. {detail}".strip(),
                    True,
                    diverged=(at, divergence_line(diverged)) if at else None,
                )
            )
            return
        outcome = (
            f"ended in an error: {end['failure']}"
            if end.get("failure")
            else "waits at an interrupt"
            if end.get("interrupts")
            else f"stopped before {', '.join(end['next'])}"
            if end.get("next")
            else "is done"
        )
        self.post_message(
            TravelWritten(
                target.spec, target.label, base, end.get("newest"), f"re-run {outcome}", bool(end.get("failure"))
            )
        )

    def on_travel_written(self: Any, message: TravelWritten) -> None:
        if message.error and not message.base:
            self.notify(message.note, severity="error", timeout=10, markup=False)
            return
        self.app.show_copy(message.spec, message.label)
        if message.base:
            self.branch_base = message.base
        if message.diverged is not None:
            self.query_one("#timeline").diverged = dict([message.diverged])
        self.select_after_load = message.select
        self.pages.clear()
        self.load_thread(live=False)
        self.notify(message.note, severity="error" if message.error else "information", timeout=8, markup=False)
