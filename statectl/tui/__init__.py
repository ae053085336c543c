"""The Textual app (`statectl tui`); imported only by that command. `statectl.tui.pages` (what the
state pane shows) is plain Rich: importing it does not import Textual."""

from __future__ import annotations

from typing import Any

__all__ = ["StatectlApp", "make_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from statectl.tui import app

        return getattr(app, name)
    raise AttributeError(name)
