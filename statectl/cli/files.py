"""Files statectl writes (exports): never over what the user did not name, never a device replaced.

- A path that is one of the command's inputs (the same file, through a symlink or a hard link)
  is refused: `export --db X -o X` would replace the database being read.
- A regular file is written beside and renamed over the target only when complete (a failure
  leaves the old file whole), keeping the mode of the file it replaces; a new file is created
  0600 (an export can hold secrets), stricter if the umask says so. A symlink is followed: the
  file it points to is replaced, the link stays.
- A character device, FIFO or socket (/dev/null, /dev/stdout, a named pipe) is written directly,
  streaming; nothing is renamed over it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from statectl.errors import StatectlError


def write_file(path: Path, write: Callable[[BinaryIO], None], inputs: Iterable[str | Path] = ()) -> str:
    """Write `path` with `write(out)`; what was done ("wrote", "replaced", "streamed to")."""
    target = Path(os.path.realpath(path))
    for given in inputs:
        try:
            if target.exists() and Path(given).exists() and os.path.samefile(target, given):
                raise StatectlError(f"{path} is {given}, which this command reads", "write the export to another file")
        except OSError:
            continue
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise StatectlError(f"{path} is a folder", "give a file name with -o")
    if mode is not None and not stat.S_ISREG(mode):  # a device, a FIFO, a socket: written in place
        try:
            with open(target, "wb") as out:
                write(out)
        except OSError as exc:
            raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
        return "streamed to"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
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
        os.replace(tmp, target)
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return "replaced" if mode is not None else "wrote"
