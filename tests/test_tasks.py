"""`python3 tasks.py test` on a fresh machine (Python 3.11 and git): it says exactly what the
whole suite needs installed before it builds anything, and `--quick` needs nothing more."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_suite_says_what_to_install_first(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(os.path.realpath(sys.executable))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run(
        [str(bare / "python3"), str(ROOT / "tasks.py"), "test"],
        capture_output=True,
        text=True,
        env={**env, "PATH": str(bare)},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # (nothing built, nothing run)
    lines = done.stderr.splitlines()
    assert "lacks" in lines[0]
    assert (
        lines[1]
        .strip()
        .startswith("install them: sudo apt-get install -y postgresql nodejs npm make g++ tmux zsh fish chromium")
    )
    assert "python3 tasks.py test --quick" in lines[2]


def test_quick_names_files_that_exist_and_need_no_tool():
    sys.path.insert(0, str(ROOT))
    try:
        import tasks
    finally:
        sys.path.remove(str(ROOT))
    for name in tasks.QUICK:
        text = (ROOT / name).read_text()
        assert "pg_server" not in text
        assert "pg_scratch" not in text
        assert "mermaid_parse" not in text
        assert "tmux" not in text
        assert "chromium" not in text
