"""Files statectl writes (exports): never over what the user did not name, never through a link,
never a device replaced.

- A path that is one of the command's inputs (the same file, through a symlink or a hard link)
  is refused: `export --db X -o X` would replace the database being read.
- A symlink is never written through (one planted in a shared folder would have the export
  overwrite the file it names): the link itself is replaced by the file written, atomically, and
  the file it named is left as it was ("replaced the symlink").
- A regular file is written beside and renamed over the target only when complete (a failure
  leaves the old file whole), keeping the mode of the file it replaces; a new file is created
  0600 (an export can hold secrets), stricter if the umask says so.
- The process's own descriptors, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`,
  are written through the descriptor (a pipe has no path to open: opening /dev/stdout fails
  there, and for a user who is not root); a character device, FIFO or socket (/dev/null, a named
  pipe) is written directly, streaming. Nothing is renamed over either.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from statectl.errors import StatectlError

_OWN_FD = re.compile(r"/dev/(stdin|stdout|stderr)|/dev/fd/(\d{1,9})|/proc/(self|thread-self|\d{1,9})/fd/(\d{1,9})")
_STD = {"stdin": 0, "stdout": 1, "stderr": 2}


def own_fd(path: str | Path) -> int | None:
    """The descriptor of this process that `path` names (/dev/stdout: 1, /dev/fd/3: 3), else None."""
    m = _OWN_FD.fullmatch(os.path.normpath(os.path.abspath(path)))
    if m is None:
        return None
    if m.group(1):
        return _STD[m.group(1)]
    if m.group(2):
        return int(m.group(2))
    if m.group(3) not in ("self", "thread-self") and int(m.group(3)) != os.getpid():
        return None  # (another process's descriptor: a path as any other)
    return int(m.group(4))


def write_file(path: Path, write: Callable[[BinaryIO], None], inputs: Iterable[str | Path] = ()) -> str:
    """Write `path` with `write(out)`; what was done ("wrote", "replaced", "replaced the symlink",
    "streamed to")."""
    _not_an_input(path, inputs)
    fd = own_fd(path)
    if fd is not None:
        try:
            out = os.fdopen(os.dup(fd), "wb")
        except OSError as exc:
            raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
        _stream(path, out, write)
        return "streamed to"
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    link = mode is not None and stat.S_ISLNK(mode)
    if mode is not None and stat.S_ISDIR(mode):
        raise StatectlError(f"{path} is a folder", "give a file name with -o")
    if mode is not None and not link and not stat.S_ISREG(mode):  # a device, a FIFO, a socket: in place
        try:  # (O_NOFOLLOW: a link put there since is not followed either)
            out = os.fdopen(os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "wb")
        except OSError as exc:
            raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
        _stream(path, out, write)
        return "streamed to"
    _replace(path, None if link else mode, write)
    return "replaced the symlink" if link else "replaced" if mode is not None else "wrote"


def _not_an_input(path: Path, inputs: Iterable[str | Path]) -> None:
    try:
        named = os.stat(path)  # (through links: what a write would reach)
    except OSError:
        return
    for given in inputs:
        try:
            same = os.path.samestat(named, os.stat(given))
        except OSError:
            continue
        if same:
            raise StatectlError(f"{path} is {given}, which this command reads", "write the export to another file")


def _replace(path: Path, mode: int | None, write: Callable[[BinaryIO], None]) -> None:
    """Write a file beside `path` and rename it over `path` (a regular file of `mode`, or nothing
    or a link: then a new file, 0600)."""
    where = Path(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{where.name}.", suffix=".part", dir=where.parent)
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    try:
        if mode is not None:
            os.chmod(fd, stat.S_IMODE(mode))  # (the file it replaces keeps its mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(fd, 0o600 & ~umask)
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(tmp, where)  # (rename never follows a link: a link there is itself replaced)
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _stream(path: Path, out: BinaryIO, write: Callable[[BinaryIO], None]) -> None:
    """Write into a descriptor or device; a reader that stopped reading ends it as `-o -` does."""
    try:
        with out:
            write(out)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
