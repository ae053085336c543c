"""Output for a terminal goes through a pager, like git's: $STATECTL_PAGER, else $PAGER, else
`less` with LESS=FRX; --no-pager, an empty or `cat` pager, or a pipe print directly; exit codes are
kept. Run in a real pseudo-terminal with a fake pager that records what it was given."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = (
    "import os, sys; open(sys.argv[1], 'wb').write(sys.stdin.buffer.read()); "
    "open(sys.argv[1] + '.less', 'w').write(os.environ.get('LESS', ''))"
)


def _in_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run statectl with its stdout on a pty: (exit code, what the terminal got, stderr)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "statectl", *args],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        err = proc.stderr.read().decode()
        return proc.wait(timeout=60), shown.decode(errors="replace"), err
    finally:
        os.close(leader)


@pytest.fixture
def pager(tmp_path):
    out = tmp_path / "paged.txt"
    return out, {"STATECTL_PAGER": f'{sys.executable} -c "{FAKE}" {out}', "LESS": "", "COLUMNS": "100"}


def test_a_report_for_a_terminal_goes_through_the_pager(dbs, pager):
    out, env = pager
    env = {k: v for k, v in env.items() if k != "LESS"}
    code, shown, err = _in_terminal(["log", "bakery-plan", "--db", str(dbs["agent"])], env)
    assert code == 0
    assert err == ""
    paged = out.read_text()
    assert paged.startswith("\x1b[1mthread bakery-plan  (36 checkpoints)")  # in colour, for less -R
    assert "bakery-plan" not in shown  # nothing went past the pager
    assert Path(f"{out}.less").read_text() == "FRX"  # git's default when $LESS is unset


@pytest.mark.parametrize("how", [["--no-pager"], "cat", ""])
def test_no_pager(dbs, pager, how):
    out, env = pager
    args = ["log", "bakery-plan", "--db", str(dbs["agent"])]
    if isinstance(how, list):
        args += how
    else:
        env["STATECTL_PAGER"] = how
    code, shown, _ = _in_terminal(args, env)
    assert code == 0
    assert "thread bakery-plan" in shown
    assert not out.exists()


def test_exit_codes_and_errors_are_kept(dbs, pager):
    out, env = pager
    code, _shown, err = _in_terminal(["show", "nope", "--db", str(dbs["agent"])], env)
    assert code == 3
    assert err.startswith("statectl: no thread 'nope'")
    code, _, _ = _in_terminal(["diff", "notes-edits", "0", "latest", "--exit-code", "--db", str(dbs["custom"])], env)
    assert code == 1
    assert "notes" in out.read_text()


def test_a_missing_pager_does_not_swallow_the_output(dbs, pager):
    _, env = pager
    env["STATECTL_PAGER"] = "no-such-pager-here -R"
    code, shown, _ = _in_terminal(["threads", "--db", str(dbs["agent"])], env)
    assert code == 0
    assert "bakery-plan" in shown
