"""The human output of threads, log, show and diff is exactly the golden files' (tests/golden.py)."""

from __future__ import annotations

import pytest
from golden import CASES, GOLDEN, WIDTHS, render


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str, width: int) -> None:
    want = (GOLDEN / f"{name}.{width}.txt").read_bytes()
    got = render(CASES[name], width)
    assert got == want, f"{name} at {width} columns differs: run `python3 tasks.py golden` and read the diff"
