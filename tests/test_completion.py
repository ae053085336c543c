"""Shell completion through Typer's own mechanism (`statectl --install-completion`), run in a real
bash: commands, thread ids (from --db or $STATECTL_DB), namespaces, checkpoint selectors and state
keys; a wrong database completes nothing and prints nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
SAMPLES = Path(__file__).resolve().parent.parent / "sample_threads"
BASH = shutil.which("bash") or "bash"


def _complete(words: str, db: str | None = None) -> list[str]:
    """COMPREPLY after TAB at the end of `words`, from the function statectl's script defines."""
    script = (
        'eval "$(_STATECTL_COMPLETE=source_bash statectl)"\n'
        "complete -p statectl >/dev/null || exit 9\n"
        f"COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} {'' if words.endswith(' ') else '- 1'} ))\n"
        "_statectl_completion statectl\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("STATECTL_DB", None)
    if db:
        env["STATECTL_DB"] = db
    done = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_what_the_database_holds():
    agent, deep = str(SAMPLES / "agent.sqlite"), str(SAMPLES / "deep.sqlite")
    assert "log" in _complete("statectl l")
    assert _complete("statectl log bak", agent) == ["bakery-plan"]
    assert _complete("statectl log ", agent) == sorted(
        ["bakery-plan", "hola-panaderia", "investor-email", "market-lookup-fails"]
    )
    assert _complete(f"statectl show --db {agent} inv") == ["investor-email"]  # --db on the line
    assert _complete("statectl show bakery-plan --key to", agent) == ["todos"]
    picks = _complete("statectl show bakery-plan ", agent)
    assert picks[0] == "latest"
    assert len(picks) == 37
    assert all(len(p) == 12 for p in picks[1:])
    assert _complete("statectl log deep-research --ns tools", deep)[0].startswith("tools:")
    assert _complete("statectl log bak", "/nonexistent/db.sqlite") == []


# -- a thread id never becomes a command: completion in real interactive shells (tmux) -----------
HOSTILE_IDS = ["semi; touch PWNED1", "tick `touch PWNED2` x", "dollar $(touch PWNED3)", "new\nline; touch PWNED4"]
RC = {
    "bash": ("bashrc", "PS1='READY$ '\neval \"$(_STATECTL_COMPLETE=source_bash statectl)\"\n"),
    "zsh": (
        ".zshrc",
        "PS1='READY%% '\nautoload -Uz compinit && compinit -u\neval \"$(_STATECTL_COMPLETE=source_zsh statectl)\"\n",
    ),
    "fish": (
        "config.fish",
        "function fish_prompt; echo -n 'READY> '; end\n_STATECTL_COMPLETE=source_fish statectl | source\n",
    ),
}


def _hostile_db(here: Path) -> Path:
    """Threads whose ids hold shell syntax, written by real LangGraph runs."""

    from typing import TypedDict

    from conftest import one_node_runs

    class S(TypedDict):
        n: int

    def step(state: S) -> dict:
        return {"n": state["n"] + 1}

    return one_node_runs(
        here / "c.sqlite", S, step, [({"n": 0}, {"configurable": {"thread_id": t}}) for t in HOSTILE_IDS]
    )


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30).stdout


def _type_tab_enter(shell: str, here: Path, typed: str) -> tuple[str, str]:
    """In a real interactive `shell` under tmux: type `typed`, Tab, Enter. The line as completed,
    and the screen after the command ran."""
    import time

    for tool in ("tmux", shell):  # (CI installs them: .ci/run)
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed for this test: sudo apt-get install {tool} (.ci/run installs it)")
    name, text = RC[shell]
    (here / name).write_text(text)
    env = (
        f"env PATH={BIN}{os.pathsep}/usr/bin{os.pathsep}/bin HOME={here} STATECTL_DB={here / 'c.sqlite'} "
        f"STATECTL_PAGER=cat"
    )
    command = {
        "bash": f"{env} bash --rcfile {here / 'bashrc'} -i",
        "zsh": f"{env} ZDOTDIR={here} zsh -i",
        "fish": f"{env} fish --no-config -i -C 'source {here / 'config.fish'}'",
    }[shell]
    session = f"statectl-{shell}-{os.getpid()}"
    _tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "40", "-c", str(here), command)
    try:

        def ready(marker: str = "READY", count: int = 1) -> bool:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if _tmux("capture-pane", "-p", "-t", session).count(marker) >= count:
                    return True
                time.sleep(0.1)
            return False

        assert ready(), _tmux("capture-pane", "-p", "-t", session)
        _tmux("send-keys", "-t", session, "-l", typed)
        _tmux("send-keys", "-t", session, "Tab")
        deadline = time.monotonic() + 30  # (the completion runs statectl: wait until the line grows)
        line = ""
        while time.monotonic() < deadline:
            line = [x for x in _tmux("capture-pane", "-p", "-t", session).splitlines() if "READY" in x][-1]
            if len(line.split("READY", 1)[1]) > len(typed) + 2:
                break
            time.sleep(0.2)
        _tmux("send-keys", "-t", session, "Enter")
        assert ready(count=2), _tmux("capture-pane", "-p", "-t", session)
        return line, _tmux("capture-pane", "-p", "-t", session)
    finally:
        _tmux("kill-session", "-t", session)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize(("typed", "thread"), [("statectl log se", 0), ("statectl log ti", 1), ("statectl log do", 2)])
def test_completion_never_hands_the_shell_a_command(tmp_path, shell, typed, thread):
    """One Tab and Enter on a hostile thread id runs statectl on that thread, never the command in
    it: bash is given the id single-quoted, zsh and fish quote it themselves."""
    _hostile_db(tmp_path)
    line, screen = _type_tab_enter(shell, tmp_path, typed)
    assert f"PWNED{thread + 1}" in line, line  # Tab completed the whole id (quoted as the shell needs)
    assert not list(tmp_path.glob("PWNED*")), (line, screen)
    assert f"thread {HOSTILE_IDS[thread]}  (3 checkpoints)" in screen, (line, screen)


def test_an_id_with_a_control_character_is_not_offered(tmp_path):
    _hostile_db(tmp_path)
    words = _complete("statectl log n", str(tmp_path / "c.sqlite"))
    assert words == []  # ("new\nline; ..." would end the command at its newline)
    assert _complete("statectl log se", str(tmp_path / "c.sqlite")) == ["'semi; touch PWNED1'"]


def test_a_missing_shell_says_what_to_install(tmp_path):
    """On a machine without zsh (a fresh clone, not CI): the test fails with the line that
    installs it, not a bare `assert False` from a tmux session that never started."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("tmux", "bash"):  # (every tool but the shell under test)
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-x",
            "-p",
            "no:cacheprovider",
            f"{__file__}::test_completion_never_hands_the_shell_a_command",
            "-k",
            "zsh",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(bare)},
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "zsh is needed for this test: sudo apt-get install zsh (.ci/run installs it)" in done.stdout
