"""Shared fixtures: the sample databases (copied, so a test can never touch the originals)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parity import DBS, SAMPLES  # noqa: E402

from statectl.cli import main  # noqa: E402


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsysbinary, monkeypatch):
    """Run the statectl CLI in-process, like the console script: exit code, stdout, stderr."""
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal, so table cells are not wrapped

    def _run(*args: str) -> Result:
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        cap = capsysbinary.readouterr()
        return Result(code, cap.out.decode(), cap.err.decode())

    return _run


@pytest.fixture
def dbs(tmp_path) -> dict[str, Path]:
    """Fresh copies of the sample SQLite files."""
    out = {}
    for name in DBS:
        out[name] = tmp_path / f"{name}.sqlite"
        shutil.copy(SAMPLES / f"{name}.sqlite", out[name])
    return out


def digest(path: Path) -> dict[str, str]:
    """Hashes of a database file and of any companion files beside it."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.parent.glob(path.name + "*"))}
