"""Golden files for the human output of `threads`, `log`, `show`, `diff` and `doctor` on the sample
threads.

`python3 tasks.py golden` writes them (tests/golden/NAME.WIDTH.txt); tests/test_golden.py checks
that the commands still print exactly these bytes. Read a regenerated file's diff in review: it
is what a user sees change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOLDEN = HERE / "golden"
WIDTHS = (80, 120)
SAMPLES = ROOT / "sample_threads"

CASES: dict[str, list[str]] = {
    "threads-agent": ["threads", "--db", "agent.sqlite"],
    "threads-custom": ["threads", "--db", "custom.sqlite"],
    "threads-deep": ["threads", "--db", "deep.sqlite"],
    "log-bakery": ["log", "bakery-plan", "--db", "agent.sqlite"],
    "log-investor": ["log", "investor-email", "--db", "agent.sqlite"],
    "log-fails": ["log", "market-lookup-fails", "--db", "agent.sqlite"],
    "log-deep": ["log", "deep-research", "--db", "deep.sqlite"],
    "log-oneline-nested": ["log", "nested", "--oneline", "--db", "custom.sqlite"],
    "show-bakery": ["show", "bakery-plan", "--db", "agent.sqlite"],
    "show-investor": ["show", "investor-email", "--db", "agent.sqlite"],
    "show-fails": ["show", "market-lookup-fails", "--db", "agent.sqlite"],
    "show-approval": ["show", "approval-waiting", "--db", "custom.sqlite"],
    "diff-bakery-12": ["diff", "bakery-plan", "12", "--db", "agent.sqlite"],
    "diff-notes": ["diff", "notes-edits", "--db", "custom.sqlite"],
    "diff-bakery-range": ["diff", "bakery-plan", "3", "9", "--db", "agent.sqlite"],
    "doctor-custom": ["doctor", "--no-plan", "--older-than", "2100-01-01", "--db", "custom.sqlite"],
    "doctor-interrupts": ["doctor", "--older-than", "2100-01-01", "--db", "interrupts.sqlite"],
}


def render(args: list[str], width: int) -> bytes:
    """What `statectl ARGS` prints into a pipe at a terminal width of `width` (COLUMNS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR")}
    env.update(COLUMNS=str(width), TZ="UTC", STATECTL_PAGER="cat")
    argv = [sys.executable, "-m", "statectl", *args]
    done = subprocess.run(argv, cwd=SAMPLES, capture_output=True, env=env, timeout=120, check=False)
    return done.stdout + (b"" if done.returncode == 0 else f"[exit {done.returncode}] ".encode() + done.stderr)


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, args in CASES.items():
        for width in WIDTHS:
            (GOLDEN / f"{name}.{width}.txt").write_bytes(render(args, width))
    print(f"wrote {len(CASES) * len(WIDTHS)} golden files to {GOLDEN}")


if __name__ == "__main__":
    main()
