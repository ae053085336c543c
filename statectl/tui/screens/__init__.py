"""One screen per view: threads, thread, graph, help."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from statectl.tui.app import StatectlApp


class AppScreen(Screen):
    """A screen of statectl's app, whose `app` is typed as the app it is (its store, `read`)."""

    if TYPE_CHECKING:
        app: StatectlApp
