"""The Textual app (`statectl tui`); imported only by that command."""

from statectl.tui.app import StatectlApp, make_app

__all__ = ["StatectlApp", "make_app"]
