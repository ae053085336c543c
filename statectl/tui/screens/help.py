"""`?`: every key, on one screen."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    (
        "Threads",
        [
            ("type, /", "filter the threads (id or status)"),
            ("↑ ↓  j k", "move"),
            ("Home End", "first / last thread (the next page loads at the end)"),
            ("Enter, click", "open the thread"),
            ("Esc", "clear the filter"),
            ("r", "reload"),
        ],
    ),
    (
        "Thread",
        [
            ("↑ ↓  j k", "move through the timeline (newest first)"),
            ("Home End  G", "newest / oldest checkpoint"),
            ("Enter, click", "read the state (Tab moves between panes too)"),
            ("d", "diff: what the selected step changed, and which node did it"),
            ("v", "raw JSON of the checkpoint (as `statectl show --json`)"),
            ("S", "the thread's bytes: by channel, and the checkpoint size per step (as `statectl size THREAD`)"),
            (
                "/",
                "in the timeline: the checkpoints whose messages, values, nodes, keys or "
                "interrupts hold the text (● marks them); in the state pane: the state; "
                "n / N next / previous",
            ),
            ("z  Z", "fold the section at the top / fold all (or click its title)"),
            ("[  ]", "previous / next section to the top (nested values are sections too)"),
            ("b", "the interrupt / error banner whole (it shows 3 lines), or folded again"),
            ("F", "long values whole (a transcript shows its newest 200 messages, a text 400 characters)"),
            (
                "g",
                "the graph: the thread's path, the selected step's nodes (━) and next (═); "
                "x: subgraphs inline (with --graph); Esc: back",
            ),
            ("e", "enter the subgraph run the step started (⤷ in the timeline); Esc: back out"),
            ("s", "choose a subgraph namespace"),
            ("c", "copy the checkpoint id"),
            (
                "f",
                "fork at the selected checkpoint: the selected value (or the state) edited as JSON, "
                "written by LangGraph's update_state into a copy (needs --graph)",
            ),
            (
                "r",
                "re-run from the selected checkpoint after showing what would run (runs your code; "
                "into a copy; needs --graph); then d compares the new branch with the old one",
            ),
            (
                "R",
                "re-run offline: every model answer, tool result and interrupt answer from the thread's "
                "recording (as `replay --offline`), after showing what it answers from; stops where "
                "your code asks something the recording does not hold",
            ),
            ("Ctrl+R", "reload (new checkpoints also appear by themselves)"),
            ("Esc", "back: search → timeline → parent graph → threads"),
        ],
    ),
    (
        "Memory (m)",
        [
            ("m", "the long-term memory store beside the checkpoints: namespaces, items, the value"),
            ("↑ ↓  j k", "move (the value pane: scroll)"),
            ("Enter, Tab", "namespace → its items → the value (as `statectl store get` shows it)"),
            ("r", "reload"),
            ("Esc", "back: value → items → namespaces → where m was pressed"),
        ],
    ),
    (
        "Everywhere",
        [
            ("?", "this help"),
            ("q", "quit"),
        ],
    ),
]


def keys_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for group, rows in KEYS:
        table.add_row(Text(group, style="bold underline"), "")
        for key, what in rows:
            table.add_row(key, what)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen):
    """The key list; any of Esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(keys_table())

    def on_mount(self) -> None:
        self.query_one("#help").border_title = "statectl keys"
