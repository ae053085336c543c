"""The README's "How the code is laid out" names every module, as sqlite-utils' test_docs.py
checks that every command is documented: a module added without a word there fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "statectl"


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## How the code is laid out")
    return text[start : text.index("\n## ", start + 1)]


def _bullets() -> dict[str, str]:
    """Each top-level bullet of the section by the folder or file it is about (`core/` ...)."""
    out = {}
    for bullet in re.split(r"\n(?=- `)", _section()):
        if m := re.match(r"- `([^`]+)`", bullet):
            out[m.group(1)] = bullet
    return out


def _named(text: str, module: str) -> bool:
    """`module` named in `text` as `module`, `module.py` or a path ending in either."""
    return re.search(rf"`(?:[\w/]*/)?{re.escape(module)}(?:\.py)?(?:/)?`", text) is not None


def _modules() -> list[tuple[str, str]]:
    """(its layer's folder or '', the module or subpackage name) of every module of statectl."""
    out = []
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
            out.append(("", path.stem))
        elif path.is_dir() and (path / "__init__.py").exists():
            for inner in sorted(path.iterdir()):
                if inner.suffix == ".py" and inner.stem != "__init__":
                    out.append((f"{path.name}/", inner.stem))
                elif inner.is_dir() and (inner / "__init__.py").exists():
                    out.append((f"{path.name}/", inner.name))
    return out


@pytest.mark.parametrize(("folder", "module"), _modules(), ids=lambda v: v)
def test_every_module_is_in_the_readme(folder, module):
    where = _bullets().get(folder, "") if folder else _section()
    assert where, f"the README's code layout has no bullet for {folder}"
    assert _named(where, module), f"statectl/{folder}{module} is not named in the README's code layout"


def test_the_check_catches_a_missing_module():
    assert not _named(_bullets()["core/"], "no_such_module")
    assert _named(_bullets()["core/"], "diff")
