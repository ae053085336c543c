"""Where `export -o` writes (issue 50 item 13): a symlink is never written through, whatever it
names (a file, a missing file, a device, a link to a link, relative or absolute): the link is
replaced by the file and the command says so; and the process's own descriptors (/dev/stdout,
/dev/stderr, /dev/fd/N, /proc/self/fd/N) are written through, as a user who is not root too,
into a pipe."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import digest

ROOT = Path(__file__).resolve().parent.parent
SAID = "(it replaced the symlink that was there; the file it named was not written)"


def _threads(data: bytes) -> list[str]:
    value, _ = json.JSONDecoder().raw_decode(data.decode())
    return [t["thread_id"] for t in value["threads"]]


def _tree(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry of `folder` (not followed): its type and bytes or link text."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            out[str(p.relative_to(folder))] = (stat.S_IFLNK, os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[str(p.relative_to(folder))] = (stat.S_IFREG, p.read_bytes())
    return out


@pytest.mark.parametrize(
    "kind", ["file", "relative", "missing", "missing-folder", "chain", "device", "fifo", "own-folder"]
)
def test_export_to_a_symlink_replaces_the_link_never_its_target(run, dbs, tmp_path, kind):
    shared, home = tmp_path / "shared", tmp_path / "home"
    shared.mkdir()
    home.mkdir()
    victim = home / "victim.txt"
    victim.write_bytes(b"the user's file\n")
    os.chmod(victim, 0o644)
    link = shared / "report.json"
    target = {
        "file": victim,
        "relative": Path("../home/victim.txt"),
        "missing": home / "new.json",  # (a dangling link: writing through it would create the file)
        "missing-folder": home / "nowhere" / "new.json",
        "chain": shared / "hop",
        "device": Path("/dev/null"),
        "fifo": home / "pipe",
        "own-folder": shared / "other.json",
    }[kind]
    if kind == "chain":
        (shared / "hop").symlink_to(victim)
    reader = None
    if kind == "fifo":  # (a reader is there, so that a write through the link would not hang)
        os.mkfifo(target)
        reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    if kind == "own-folder":
        target.write_bytes(b"{}")
    link.symlink_to(target)
    before = _tree(home), (shared / "other.json").read_bytes() if kind == "own-folder" else None
    r = run("export", "fanout", "--db", str(dbs["custom"]), "-o", str(link))
    if reader is not None:
        try:
            through = os.read(reader, 1 << 20)
        except BlockingIOError:
            through = b""
        os.close(reader)
        assert through == b""
    assert r.code == 0, r.err
    assert r.err == f"exported 1 thread to {link} {SAID}\n"
    assert not link.is_symlink()
    assert stat.S_IMODE(link.stat().st_mode) == 0o600  # a new file: private
    assert _threads(link.read_bytes()) == ["fanout"]
    assert (_tree(home), (shared / "other.json").read_bytes() if kind == "own-folder" else None) == before
    assert not (home / "new.json").exists()
    assert {p.name for p in shared.iterdir()} <= {"hop", "other.json", "report.json"}  # (no .part left)


def test_a_link_to_a_folder_or_to_the_database_is_refused(run, dbs, tmp_path):
    db = dbs["custom"]
    to_db = tmp_path / "db-link.json"
    to_db.symlink_to(db)
    to_folder = tmp_path / "folder-link"
    to_folder.symlink_to(tmp_path)
    for link, said in ((to_db, "which this command reads"), (to_folder, "is a folder")):
        r = run("export", "fanout", "--db", str(db), "-o", str(link))
        assert r.code == 2, r.err
        assert said in r.err
        assert len(r.err.splitlines()) == 1
        assert link.is_symlink()


@pytest.fixture
def readable(dbs):
    """custom.sqlite in a folder any user reads (the command may run as `nobody`)."""
    folder = Path(tempfile.mkdtemp(prefix="statectl-out-"))
    try:
        os.chmod(folder, 0o755)
        db = folder / "custom.sqlite"
        shutil.copy(dbs["custom"], db)
        os.chmod(db, 0o644)
        yield db
    finally:
        shutil.rmtree(folder)


def _as_user(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`python -m statectl ARGS` as a user who is not root (`nobody`, when the tests run as root)."""
    drop = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) runs the command as nobody"
        drop = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": "/tmp", "COLUMNS": "200"}
    return subprocess.run(
        [*drop, sys.executable, "-m", "statectl", *args], capture_output=True, timeout=300, env=env, cwd="/", **kwargs
    )


@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1", "/proc/thread-self/fd/1"])
def test_export_to_dev_stdout_as_a_user_into_a_pipe(readable, name):
    r = _as_user(["export", "fanout", "--db", str(readable), "-o", name])
    assert r.returncode == 0, r.stderr
    assert _threads(r.stdout) == ["fanout"]
    assert r.stderr.decode() == f"exported 1 thread to {name}\n"


def test_export_to_dev_stderr_and_an_inherited_descriptor(readable):
    r = _as_user(["export", "fanout", "--db", str(readable), "-o", "/dev/stderr"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert _threads(r.stderr) == ["fanout"]
    assert r.stderr.decode().endswith("exported 1 thread to /dev/stderr\n")
    read, write = os.pipe()
    try:
        r = _as_user(["export", "fanout", "--db", str(readable), "-o", f"/dev/fd/{write}"], pass_fds=(write,))
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as fh:
            read = -1
            got = fh.read()
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
    assert r.returncode == 0, r.stderr
    assert _threads(got) == ["fanout"]


def test_a_closed_descriptor_is_one_line(readable):
    before = sorted(os.listdir(readable.parent))
    r = _as_user(["export", "fanout", "--db", str(readable), "-o", "/dev/fd/9"])
    assert r.returncode == 2
    assert r.stderr.decode() == "statectl: cannot write /dev/fd/9: Bad file descriptor\n"
    assert sorted(os.listdir(readable.parent)) == before


# -- the other commands that write a file: copy/fork/replay --to, prune --backup --------------------
NOTES = f"{ROOT}/sample_threads/custom_app.py:notes_builder"


@pytest.mark.parametrize("kind", ["database", "dangling"])
@pytest.mark.parametrize(
    "args",
    [
        ["copy", "notes-edits"],
        ["fork", "notes-edits", "1", "--graph", NOTES, "--set", "count=1"],
        ["replay", "notes-edits", "1", "--graph", NOTES],
    ],
    ids=["copy", "fork", "replay"],
)
def test_to_a_symlink_is_refused_and_nothing_is_written(run, dbs, tmp_path, args, kind):
    """`--to LINK` naming a checkpoint database (a real one) would have the threads written into
    it; naming nothing, created through it. Refused in one line, exit 2; nothing changes."""
    shared, home = tmp_path / "shared", tmp_path / "home"
    shared.mkdir()
    home.mkdir()
    victim = home / "app.sqlite"
    shutil.copy(dbs["agent"], victim)
    link = shared / "out.sqlite"
    link.symlink_to(victim if kind == "database" else home / "new.sqlite")
    before = _tree(home)
    r = run(*args, "--db", str(dbs["custom"]), "--to", str(link))
    assert r.code == 2, r.err
    assert r.err == f"statectl: --to {link} is a symlink: not followed (name the file it points to, or a new file)\n"
    assert _tree(home) == before
    assert sorted(p.name for p in shared.iterdir()) == ["out.sqlite"]
    assert link.is_symlink()


@pytest.mark.parametrize("kind", ["empty-file", "dangling"])
def test_prune_backup_never_follows_a_link_put_there_after_the_check(run, dbs, tmp_path, monkeypatch, kind):
    """--backup names a new file; a link planted between the check and the copy (the race, made
    here by skipping the check) is not followed (SQLite would write the backup into the file it
    names, or create it there): one line, exit 2, nothing deleted or written."""
    import statectl.project.prune as prune

    db = dbs["custom"]
    home = tmp_path / "home"
    home.mkdir()
    victim = home / "victim.sqlite"
    if kind == "empty-file":
        victim.write_bytes(b"")
    link = tmp_path / "backup.sqlite"
    link.symlink_to(victim)
    files = _tree(home)
    before = digest(db)
    checks = []
    monkeypatch.setattr(prune, "backup_target", checks.append)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--backup", str(link), "--db", str(db))
    assert checks, "the check was skipped: the race it stands for"
    assert r.code == 2, r.err
    assert r.err == f"statectl: --backup {link} exists: not replaced (name a new file)\n"
    assert _tree(home) == files
    assert link.is_symlink()
    assert digest(db) == before


def test_the_writer_never_writes_through_a_link_swapped_in_after_the_check(tmp_path, monkeypatch):
    """The CLI checks `--to` long before the writer opens it (a graph's import takes seconds): a
    symlink put in its place meanwhile, or beside it as SQLite's -wal/-journal, is refused by the
    writer itself, and the file it names is not touched (it was written, WAL mode included)."""
    import shutil
    import sqlite3

    from statectl.project import write_targets, writer

    here = Path(__file__).resolve().parent.parent / "sample_threads"
    victim = tmp_path / "victim.db"
    shutil.copy(here / "custom.sqlite", victim)
    before = victim.read_bytes()
    dest = tmp_path / "shared.sqlite"
    shutil.copy(here / "custom.sqlite", dest)

    real = sqlite3.connect

    def swapped(path: str, *args: Any, **kwargs: Any) -> Any:  # (the swap lands between check and open)
        os.replace(dest, tmp_path / "moved.sqlite")
        os.symlink(victim, dest)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(write_targets.sqlite3, "connect", swapped)  # (SqliteTarget opens the file)
    with pytest.raises(writer.WriteError, match="symlink"):
        writer.Destination({"kind": "sqlite", "path": str(dest), "timeout": 1})
    monkeypatch.setattr(write_targets.sqlite3, "connect", real)
    assert victim.read_bytes() == before
    assert not Path(str(victim) + "-wal").exists()
    os.remove(dest)
    shutil.copy(here / "custom.sqlite", dest)
    os.symlink(victim, str(dest) + "-journal")
    with pytest.raises(writer.WriteError, match="-journal is a symlink"):
        writer.Destination({"kind": "sqlite", "path": str(dest), "timeout": 1})
    assert victim.read_bytes() == before
