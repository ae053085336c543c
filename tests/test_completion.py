"""Shell completion through Typer's own mechanism (`statectl --install-completion`), run in a real
bash: commands, thread ids (from --db or $STATECTL_DB), namespaces, checkpoint selectors and state
keys; a wrong database completes nothing and prints nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
