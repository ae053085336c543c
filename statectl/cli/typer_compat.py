"""Every workaround for Typer's internals, in one place: each is checked by tests/test_framework_compat.py,
which fails loudly when a Typer release changes what it relies on.

- `plain_values`: Typer 0.2x converts each value through a pydantic adapter (40-70 ms a command);
  statectl's plain parameters are converted directly (`typer._coercion`, `typer.core`).
- `plain_help`: help text printed as written (no `\\[required]`), argument help kept after
  click 8.3 (`typer.core.TyperArgument`, `typer.rich_utils`).
- `pipe_safe`: a closed pipe reaches `main` as `PipeClosed` (click turns it into exit 1).
- `needed`: only the command the arguments name is built into click parameters.
- `quote_for_bash`: a completion bash inserts is quoted where it holds shell syntax
  (`typer._completion_classes.BashComplete.format_completion`).
- `word_metavars`: help names a value by what the user types (THREAD, N, KEY=VALUE, DURATION),
  not by its Python type (`<str>`, `<int range>`, `{thread_id}`, `[x>=0]`): `typer.core`'s
  `_TyperParameter.display_name_raw`, `TyperArgument._usage_display_name` and
  `display_type_rich`, `TyperOption.display_type_rich` and `_get_number_range_help_str`.
"""

from __future__ import annotations

from typing import Any

try:  # Typer with click vendored (>= 0.2x)
    from typer.exceptions import Abort, Exit, TyperException
except ImportError:  # Typer on click
    from click.exceptions import Abort, Exit  # type: ignore[assignment]
    from click.exceptions import ClickException as TyperException  # type: ignore[assignment]

__all__ = [
    "Abort",
    "Exit",
    "PipeClosed",
    "TyperException",
    "needed",
    "pipe_safe",
    "plain_help",
    "plain_values",
    "quote_for_bash",
    "word_metavars",
]

OPTION_WORDS = {
    "--after": "THREAD",
    "--allow-type": "MODULE.NAME",
    "--as": "THREAD",
    "--as-node": "NODE",
    "--backup": "FILE",
    "--batch": "N",
    "--db": "DB",
    "--db-b": "DB",
    "--failed-node": "NODE",
    "--fail-on": "LEVEL",
    "--format": "FORMAT",
    "--graph": "TARGET",
    "--grep": "TEXT",
    "--host": "HOST",
    "--max-chars": "N",
    "--keep-last": "N",
    "--key": "KEY",
    "--limit": "N",
    "--meta": "KEY=VALUE",
    "--node": "NODE",
    "--ns": "NS",
    "--older-than": "DURATION",
    "--poll": "SECONDS",
    "--port": "PORT",
    "--python": "PYTHON",
    "--redact-key": "KEY",
    "--redact-pattern": "REGEX",
    "--resume": "JSON",
    "--set": "KEY=JSON",
    "--since": "WHEN",
    "--sort": "ORDER",
    "--thread": "THREAD",
    "--token": "TOKEN",
    "--tool-timeout": "SECONDS",
    "--to": "DB",
    "--until": "WHEN",
    "--changed": "KEY",
    "--match": "TEXT",
    "--max-count": "N",
    "--output": "FILE",
    "--status": "STATUS",
    "--timeout": "SECONDS",
    "--api-key": "KEY",
    "--aes-key": "KEY",
    "--expect": "KEY=JSON",
    "--offline": "[models]",
}
"""An option's value as help names it (by its long flag; one not listed: its flag's name)."""
ARGUMENT_WORDS = {"thread_id": "THREAD", "checkpoint": "CHECKPOINT", "threads": "THREAD"}
"""An argument as help names it (one not listed: its name in capitals)."""
COMMAND_OPTION_WORDS = {("replay", "--until"): "NODE"}
"""Where one flag means another thing in one command."""


def plain_values() -> None:
    """Typer 0.2x converts every value through a pydantic TypeAdapter built on first use:
    importing pydantic and building the adapters costs 40-70 ms a command, more than all of
    statectl's own start-up. statectl's parameters are plain: str, bool, int and float (with a
    minimum), a Path, a list of str. Convert those directly, as Typer on click did, and leave any
    other to Typer. (Typer 0.1x, on click, has no adapters: nothing to do.)"""
    try:
        from pathlib import Path as _Path

        from typer import _coercion, core
        from typer._click.exceptions import BadParameter
    except ImportError:
        return
    base, runtime = getattr(core, "_TyperParameter", None), getattr(_coercion, "RuntimeParam", None)
    if base is None or runtime is None or not hasattr(base, "get_runtime_param"):
        return
    plain = {str: str, bool: bool, int: int, float: float, _Path: _Path}
    path_checks = ("exists", "writable", "resolve_path", "allow_dash")  # (readable: only with exists)

    class Plain(runtime):  # type: ignore[misc, valid-type]
        # (not a dataclass of its own: its generated methods were compiled at every start)
        def __init__(self, parameter_info: Any, annotation: Any, convert: Any = str) -> None:
            super().__init__(parameter_info, annotation)
            object.__setattr__(self, "convert", convert)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, (list, tuple)):
                return [self._one(v, param, ctx) for v in value]
            return self._one(value, param, ctx)

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, self.convert):
                out = value
            else:
                try:
                    out = self.convert(value)
                except (TypeError, ValueError):
                    kind = {int: "an integer", float: "a number"}.get(self.convert, self.convert.__name__)
                    raise BadParameter(f"{value!r} is not {kind}", ctx=ctx, param=param) from None
            low = getattr(self.parameter_info, "min", None)
            if low is not None and out < low:
                raise BadParameter(f"{out} is below the minimum {low}", ctx=ctx, param=param)
            return out

    build = base.get_runtime_param

    def get_runtime_param(self: Any) -> Any:
        if getattr(self, "_runtime_param", None) is None:
            desc = getattr(self, "type_descriptor", None)
            info = getattr(desc, "parameter_info", None)
            ann = getattr(desc, "annotation", None)
            if getattr(ann, "__origin__", None) is list and getattr(ann, "__args__", None) == (str,):
                ann = str
            simple = (
                info is not None
                and ann in plain
                and getattr(info, "max", None) is None
                and not getattr(desc, "is_choice", True)
                and getattr(desc, "file_annotation", 1) is None
                and not any(getattr(info, k, False) for k in path_checks)
            )
            if simple and desc is not None and ann is not None:
                self._runtime_param = Plain(parameter_info=info, annotation=desc.annotation, convert=plain[ann])
        return build(self)

    base.get_runtime_param = get_runtime_param


def plain_help() -> None:
    """Typer (0.19) escapes `[required]` and `[default: x]` for Rich markup even where help is
    plain text, printing `\\[required]`: keep them as written. And since click 8.3 gave
    `click.Argument` a `help` of its own, Typer's argument help is reset to None by click's
    `__init__`: set it again after (and leave the section to Typer: click's own "Positional
    arguments" would list them twice)."""
    from typer import core, rich_utils

    rich_utils.escape_before_html_export = lambda input_text: input_text.strip()
    if getattr(core, "rich", None) is not None:  # (Typer before 0.17 escaped with rich.markup.escape)
        core.rich = None  # type: ignore[attr-defined]
    core.TyperCommand.format_arguments = lambda self, ctx, formatter: None  # type: ignore[attr-defined]
    init = core.TyperArgument.__init__
    if getattr(init, "_statectl", False):
        return

    def keep_help(self: Any, *args: Any, help: str | None = None, **kwargs: Any) -> None:  # noqa: A002
        init(self, *args, help=help, **kwargs)
        self.help = help

    keep_help._statectl = True  # type: ignore[attr-defined]
    core.TyperArgument.__init__ = keep_help  # type: ignore[method-assign]


def word_metavars() -> None:
    """Help and usage name values by what the user types: `--limit N`, `show THREAD
    [CHECKPOINT]`, `--meta KEY=VALUE`, not `<int range>`, `{thread_id}`, `<list[str]>`; and no
    `[x>=0]` range note (the help says what a value may be)."""
    from typer import core

    base: Any = getattr(core, "_TyperParameter", None)  # (Typer 0.2x; Typer on click names values as click does)
    argument: Any = getattr(core, "TyperArgument", None)
    option: Any = getattr(core, "TyperOption", None)
    needs = ((argument, "_usage_display_name"), (option, "display_type_rich"), (option, "_get_number_range_help_str"))
    if base is None or any(cls is None or not hasattr(cls, name) for cls, name in needs):
        return
    if getattr(base, "_statectl_words", False):
        return

    def argument_word(self: Any) -> str:
        if self.metavar is not None:
            return str(self.metavar)
        return ARGUMENT_WORDS.get(self.name, str(self.name).upper())

    def option_word(self: Any, ctx: Any) -> str | None:
        if self.metavar is not None:
            return str(self.metavar)
        if getattr(self, "is_flag", False):
            return None
        flag = next((o for o in self.opts if o.startswith("--")), self.opts[0])
        command = str(getattr(getattr(ctx, "command", None), "name", ""))
        return COMMAND_OPTION_WORDS.get((command, flag)) or OPTION_WORDS.get(flag, flag.lstrip("-").upper())

    def usage_name(self: Any) -> str:
        name = argument_word(self)
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    argument.display_name_raw = property(argument_word)
    argument._usage_display_name = usage_name
    argument.display_type_rich = lambda self, ctx: None
    option.display_type_rich = option_word
    option._get_number_range_help_str = lambda self: None
    base._statectl_words = True


class PipeClosed(Exception):
    """The reader of stdout went away (`statectl log -p T | head`). Not an OSError: click's main
    turns a broken pipe into exit 1 itself, and only where the output outgrew the pipe's buffer."""


def pipe_safe(info: Any) -> Any:
    """A registered command whose broken pipe reaches `main` as `PipeClosed`."""
    import functools

    fn = info.callback
    if getattr(fn, "_pipe_safe", False):
        return info

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            raise PipeClosed from None

    call._pipe_safe = True  # type: ignore[attr-defined]
    info.callback = call
    return info


def needed(commands: list[Any], args: list[str]) -> list[Any]:
    """The command the arguments name, or all of them (for help and for errors that list them).

    Typer turns every registered command's signature into click parameters on each run; for
    eight commands that is ~8 ms of a start-up that the benchmark counts."""
    name = next((a for a in args if not a.startswith("-")), None)
    named = [c for c in commands if (c.name or c.callback.__name__) == name]
    return [pipe_safe(c) for c in named or commands]


SHELL_SPECIAL = frozenset(" \t'\"\\$`;&|<>()*?[]{}~#!")
"""Characters bash reads as syntax (or a glob) in a word: a completion holding one is quoted."""


def quote_for_bash() -> None:
    """Bash inserts a completion as it is given: a thread id such as `z; touch FILE` or `$(...)`
    would be typed into the command line as shell syntax, and one Enter would run it. Typer's
    bash completion hands bash the values raw; quote those that hold shell syntax (zsh and fish
    quote what they insert themselves). Called only when bash asks for completions."""
    import shlex

    try:
        from typer import _completion_classes
    except ImportError:
        return
    cls = getattr(_completion_classes, "BashComplete", None)
    if cls is None or getattr(cls.format_completion, "_statectl", False):
        return

    def format_completion(self: Any, item: Any) -> str:
        value = str(item.value)
        return shlex.quote(value) if SHELL_SPECIAL & set(value) else value

    format_completion._statectl = True  # type: ignore[attr-defined]
    cls.format_completion = format_completion
