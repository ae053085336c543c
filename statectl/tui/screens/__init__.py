"""One screen per view: threads, thread, graph, help."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.screen import Screen

if TYPE_CHECKING:
    from statectl.tui.app import StatectlApp


class AppScreen(Screen):
    """A screen of statectl's app, whose `app` is typed as the app it is (its store, `read`).

    `q` and `?` are its first keys, so the footer shows them first: at 80 columns a screen's
    own keys fill the footer, and what ends it is cut (it hid both)."""

    BINDINGS = [
        Binding("q", "app.quit", "Quit"),
        Binding("question_mark", "app.help", "Keys"),
    ]

    if TYPE_CHECKING:
        app: StatectlApp
