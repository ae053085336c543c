"""The arguments taken out before Typer parses the rest: the secrets and bounds of a command."""

from __future__ import annotations

from statectl.errors import StatectlError
from statectl.secrets import remember, secrets_of
from statectl.settings import Settings

OFFLINE_VALUES = ("all", "models")
"""What `replay --offline` takes: `all` (the default: models and tools answered from the
recording) or `models` (only the models: the tools run for real)."""


def offline_typo(value: str) -> None:
    """Refuse a word after `--offline` that looks like a misspelt `models` / `all` (it would
    otherwise be taken as the CHECKPOINT): a checkpoint id, a step number or `latest` is not one."""
    import difflib

    lowered = value.lower()
    near = difflib.get_close_matches(lowered, OFFLINE_VALUES, n=1, cutoff=0.7)
    if near:
        raise StatectlError(
            f"--offline {value!r}: did you mean --offline {near[0]}?",
            "--offline takes no value (models and tools answered), or 'models' (the tools run for real)",
        )


def take_settings(args: list[str]) -> tuple[list[str], Settings]:
    """Options of every command taken out before Typer parses the arguments: `--api-key KEY` (an
    https:// server) and `--aes-key KEY` (an EncryptedSerializer's key), so that no usage message
    or traceback can ever echo a secret, `--unpickle-inert` (read pickled values with the inert
    unpickler), `--timeout SECONDS` and `--insecure` (an API key over plain http:// to another
    host). Returns the other arguments and the `Settings`."""
    api_key: str | None = None
    aes_key: bytes | None = None
    unpickle = False
    timeout: float | None = None
    insecure = False
    out, i = [], 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ("--api-key", "--aes-key") and (eq or i + 1 < len(args)):
            if not eq:
                value, i = args[i + 1], i + 1
            if name == "--api-key":
                api_key = value
            else:
                aes_key = value.encode()
        elif arg == "--unpickle-inert":
            unpickle = True
        elif arg == "--insecure":
            insecure = True
        elif name == "--timeout" and (eq or i + 1 < len(args)):
            if not eq:
                value, i = args[i + 1], i + 1
            try:
                timeout = float(value)
            except ValueError:
                raise StatectlError(f"--timeout takes seconds, not {value!r}") from None
            if timeout <= 0:
                raise StatectlError("--timeout must be more than 0 seconds")
        elif arg == "--offline":  # (`replay --offline` takes an optional value: `--offline models`)
            given = i + 1 < len(args) and args[i + 1] in OFFLINE_VALUES
            if not given and i + 1 < len(args):
                offline_typo(args[i + 1])
            out.append(f"--offline={args[i + 1] if given else 'all'}")
            i += given
        elif arg == "--":
            out += args[i:]
            break
        else:  # (a password in any argument, `-o URL` too, is never echoed by a message about it)
            remember(*secrets_of(value if eq and name.startswith("-") else arg))
            out.append(arg)
        i += 1
    return out, Settings(api_key=api_key, aes_key=aes_key, unpickle=unpickle, timeout=timeout, insecure=insecure)
