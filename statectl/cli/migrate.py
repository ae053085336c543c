"""`statectl migrate`: stored values rewritten so the current code loads them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from statectl.cli.options import Db, Json, WriterPython, complete_thread, open_store, source_spec
from statectl.cli.output import emit_json, error_text
from statectl.errors import StatectlError

REFUSED = {
    "folder": (
        "a `langgraph dev` folder is the dev server's own store: migrate does not write to it",
        "copy the threads into a SQLite file first (statectl copy --all --to FILE), then migrate that",
    ),
    "export": ("an export is statectl's own file: migrate does not rewrite it", "export again after migrating"),
    "server": (
        "a LangGraph server stores its threads in its own database: migrate does not write through it",
        "migrate the server's Postgres database (--db postgresql://...)",
    ),
}


def migrate(
    thread_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="THREAD",
            help="Threads to migrate (ids or unique prefixes).",
            show_default=False,
            autocompletion=complete_thread,
        ),
    ] = None,
    db: Db = None,
    every: Annotated[bool, typer.Option("--all", help="Migrate every thread.")] = False,
    rename_class: Annotated[
        list[str] | None,
        typer.Option(
            "--rename-class",
            metavar="OLD=NEW",
            help="OLD.module.Name=NEW.module.Name: values of a class that moved (several allowed); "
            "old.module=new.module renames every class of a module.",
            show_default=False,
        ),
    ] = None,
    rename_key: Annotated[
        list[str] | None,
        typer.Option(
            "--rename-key",
            metavar="OLD=NEW",
            help="OLD=NEW: a state key renamed (several allowed).",
            show_default=False,
        ),
    ] = None,
    drop_key: Annotated[
        list[str] | None,
        typer.Option(
            "--drop-key",
            metavar="KEY",
            help="A state key the graph no longer has (several allowed).",
            show_default=False,
        ),
    ] = None,
    repickle: Annotated[
        bool,
        typer.Option(
            "--repickle",
            help="Values LangGraph's pickle_fallback pickled, rewritten in msgpack where their type allows "
            "(read by statectl's restricted unpickler in the project's interpreter).",
        ),
    ] = False,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-type",
            metavar="module.Name",
            help="With --repickle: a class the pickles may build besides LangGraph's safe set (several "
            "allowed). Only for data you trust: building a class runs its code.",
            show_default=False,
        ),
    ] = None,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="Write the migrated threads to this SQLite file or postgresql:// URL (through LangGraph's saver).",
            show_default=False,
        ),
    ] = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="Rewrite the store itself, a thread per transaction (with --yes).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --in-place: do not ask.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would change (the default without --to or --in-place).")
    ] = False,
    backup: Annotated[
        Path | None,
        typer.Option(
            "--backup",
            help="With --in-place (SQLite): first copy the database to this new file.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="With --to: replace threads the destination already holds.")
    ] = False,
    python: WriterPython = None,
    json: Json = False,
) -> None:
    """Rewrite stored threads so today's code loads them.

    Classes moved, keys renamed or dropped: stored values rewritten to match.
    Each value is rewritten at the byte level (nothing it names is imported; what a rename does
    not touch keeps its stored bytes), in every checkpoint and pending write of the thread, its
    channel versions kept consistent. Without --to or --in-place nothing is written: per thread,
    what would change. --to writes the migrated threads to a copy (as `copy`); --in-place --yes
    rewrites the store, a thread per transaction, read again inside it (a run writing meanwhile
    loses nothing). A class renamed to must exist in the project's interpreter (--python).
    --repickle: pickled values (pickle_fallback) read by statectl's restricted unpickler, which
    builds only LangGraph's safe set and --allow-type classes (another class: refused, nothing
    written), and encoded by LangGraph's serializer without pickle_fallback; a value it cannot
    encode stays pickled, reported."""
    from statectl.core.migrate import close_names

    migration = _migration(rename_class, rename_key, drop_key, repickle)
    _check_options(bool(thread_ids) or every, to, in_place=in_place, dry_run=dry_run, backup=backup, replace=replace)
    allowed = _repickle_options(repickle, allow)
    from statectl.project import migrate as project

    with open_store(db) as store:
        dest = _where(store, db, to, backup)
        ids = [store.thread_id(t) for t in thread_ids or ()]
        if every:
            ids += [t for t in store.iter_thread_ids() if t not in ids]
        if not ids:
            typer.echo(f"statectl: {error_text(f'no threads in {store.label}: nothing to migrate')}", err=True)
            return
        label = store.label
        if dest is not None and dest.new and not repickle:  # (a new file: written aside, put in place at the end)
            _copied(store, db, ids, to or "", replace, python, migration, json)
            return
        planned = list(project.plan(store.source, migration, ids))
        _check(migration, close_names)
        project.check_classes(python, migration)
        if repickle and not in_place:
            outcomes, where = _repickled(store, db, ids, planned, to, replace, python, migration, allowed)
            _report(label, outcomes, json, dry=to is None, to=where)
            return
        if dest is None and not in_place:
            _report(
                label,
                [project.Outcome(t, "would change" if c.changed else project.NOTHING, c) for t, c in planned],
                json,
                dry=True,
            )
            return
        if not any(c.changed for _, c in planned) and not repickle:
            typer.echo(f"statectl: nothing to migrate in {error_text(label)} with these options", err=True)
            if json:
                emit_json({"db": label, "applied": False, "threads": []})
            return
        if dest is not None:
            _copied(store, db, ids, to or "", replace, python, migration, json, planned)
            return
        pickles = (python, allowed) if repickle else None
        outcomes, interrupted = _in_place(store, migration, planned, label, yes=yes, backup=backup, repickle=pickles)
    _report(label, outcomes, json, in_place=True)
    if interrupted:
        raise typer.Exit(130)
    if any(o.status.startswith("skipped") for o in outcomes):
        raise typer.Exit(1)


def _migration(
    rename_class: list[str] | None, rename_key: list[str] | None, drop_key: list[str] | None, repickle: bool = False
) -> Any:
    """The renames and drops the options ask for; none at all is one line."""
    from statectl.core.migrate import Migration, parse_renames

    migration = Migration(
        parse_renames(rename_class or [], "--rename-class"),
        parse_renames(rename_key or [], "--rename-key"),
        list(drop_key or []),
    )
    if migration.empty and not repickle:
        raise StatectlError(
            "say what to migrate: --rename-class, --rename-key, --drop-key or --repickle",
            "statectl migrate THREAD... --rename-class module.Old=module.New",
        )
    return migration


def _repickle_options(repickle: bool, allow: list[str] | None) -> list[str]:
    """The --allow-type names (checked), after refusing what --repickle does not do."""
    from statectl.cli.write_options import allowed_types

    if allow and not repickle:
        raise StatectlError("--allow-type goes with --repickle")
    return allowed_types(list(allow or []))


def _repickled(
    store: Any,
    db: str | None,
    ids: list[str],
    planned: list[Any],
    to: str | None,
    replace: bool,
    python: str | None,
    migration: Any,
    allowed: list[str],
) -> tuple[list[Any], str | None]:
    """--repickle: the threads copied through the writer, which reads each pickled value and
    encodes it again (to a scratch file removed after, for a dry run); the outcomes, and where."""
    import tempfile

    from statectl.project import migrate as project
    from statectl.project.copy_fork_rerun import copy_threads

    inner = project.migrated_rows(migration)

    def transform(row: dict[str, Any]) -> dict[str, Any] | None:
        if row.get("op") == "open":
            return {**row, "repickle": allowed, "repickle_dry": to is None}
        return inner(row)

    with tempfile.TemporaryDirectory(prefix="statectl-repickle-") as scratch:
        target = to if to is not None else str(Path(scratch) / "dry-run.sqlite")
        done = copy_threads(store, source_spec(db), ids, target, replace=replace, python=python, transform=transform)
    outcomes = []
    for t, c in planned:
        converted, kept = done.get("repickled", {}).get(t, 0), done.get("kept", {}).get(t, {})
        changed = c.changed or converted
        status = (project.MIGRATED if to is not None else "would change") if changed else project.NOTHING
        note = project.repickle_note(converted, kept, done=to is not None)
        outcome = project.Outcome(t, status, c, note)
        outcome.repickled, outcome.kept = converted, kept
        outcomes.append(outcome)
    return outcomes, done["to"] if to is not None else None


def _copied(
    store: Any,
    db: str | None,
    ids: list[str],
    to: str,
    replace: bool,
    python: str | None,
    migration: Any,
    json: bool,
    planned: list[Any] | None = None,
) -> None:
    """--to: the threads copied through the writer, each migrated on its way. Into a new file
    (`planned` None), each value is walked once (no plan pass first): the options are checked
    against the threads before the writer commits, and a refusal (or nothing to change) holds the
    commit back, so the file written aside is removed and nothing is created. Into an existing
    store or Postgres, whose setup the writer would already touch, the plan has run first."""
    from statectl.core.migrate import Counts, close_names
    from statectl.project import migrate as project
    from statectl.project.copy_fork_rerun import copy_threads

    def check() -> None:
        _check(migration, close_names)
        project.check_classes(python, migration)

    if planned is not None:  # (checked already)
        done = copy_threads(
            store,
            source_spec(db),
            ids,
            to,
            replace=replace,
            python=python,
            transform=project.migrated_rows(migration, raw=True),
            raw=True,
        )
        outcomes = [project.Outcome(t, project.MIGRATED if c.changed else project.NOTHING, c) for t, c in planned]
        _report(store.label, outcomes, json, to=done["to"])
        return
    one = project.OnePass(migration, check)
    try:
        done = copy_threads(store, source_spec(db), ids, to, replace=replace, python=python, transform=one, raw=True)
    except StatectlError:
        if one.refused is not None:
            raise one.refused from None
        if not one.nothing:
            raise
        typer.echo(f"statectl: nothing to migrate in {error_text(store.label)} with these options", err=True)
        if json:
            emit_json({"db": store.label, "applied": False, "threads": []})
        return
    counts = [(t, one.counts.get(t) or Counts()) for t in ids]
    outcomes = [project.Outcome(t, project.MIGRATED if c.changed else project.NOTHING, c) for t, c in counts]
    _report(store.label, outcomes, json, to=done["to"])


def _where(store: Any, db: str | None, to: str | None, backup: Path | None) -> Any:
    """The destination of a copy (None: none), after refusing a store migrate does not write and
    a --to or --backup that cannot be written: before any work."""
    from statectl.project.write_targets import write_target

    kind = store.source.kind
    target = write_target(kind)
    if target is None:
        refused = REFUSED.get(kind, (f"statectl does not write a store of kind {kind!r}", None))
        raise StatectlError(f"{store.label}: {refused[0]}", refused[1])
    if backup is not None:
        target.refuse_backup(store.label)
        from statectl.project.prune import backup_target

        backup_target(backup)
    if to is None:
        return None
    from statectl.core.destination import destination

    return destination(to, store.source, source_spec(db))  # (the source itself is refused)


def _in_place(
    store: Any,
    migration: Any,
    planned: list[Any],
    label: str,
    *,
    yes: bool,
    backup: Path | None,
    repickle: tuple[str | None, list[str]] | None = None,
) -> tuple[list[Any], bool]:
    """Ask, back up, then each thread in its own transaction: the outcomes, and whether Ctrl+C
    stopped it (the thread in progress rolled back, the ones done kept). `repickle`: (--python,
    --allow-type): every pickled value read first (a class not allowed refuses before anything
    is written), then encoded again in each thread's transaction."""
    from statectl.cli.write_options import confirm
    from statectl.project import migrate as project
    from statectl.project.write_targets import TARGETS

    repickler = None if repickle is None else project.Repickler(*repickle)
    try:
        if repickler is None:
            todo = [(t, c) for t, c in planned if c.changed]
        else:
            todo = project.repickle_plan(store.source, migration, planned, repickler)
        if not todo:
            store.close()
            return [], False
        confirm(f"Rewrite {len(todo)} thread{'s' * (len(todo) != 1)} of {error_text(label)} in place?", yes)
        writer = TARGETS[store.source.kind].migrator(store, migration)
        writer.repickler = repickler
        try:
            if backup is not None:
                writer.backup(backup)
            try:
                return project.migrate_all(writer, todo), False
            except project.Interrupted as stop:
                return stop.outcomes, True
        finally:
            # the reading connection first: the last to close a WAL database moves its log into the file
            store.close()
            writer.close()
    finally:
        if repickler is not None:
            repickler.close()


def _check_options(
    named: bool, to: str | None, *, in_place: bool, dry_run: bool, backup: Path | None, replace: bool
) -> None:
    """One line for options that do not go together."""
    if not named:
        raise StatectlError("name the threads to migrate, or give --all", "statectl threads lists them")
    if in_place and to is not None:
        raise StatectlError("--in-place rewrites the store; --to writes a copy: give one")
    if dry_run and (in_place or to is not None):
        raise StatectlError("--dry-run writes nothing: leave out --to and --in-place")
    if backup is not None and not in_place:
        raise StatectlError("--backup goes with --in-place")
    if replace and to is None:
        raise StatectlError("--replace goes with --to")


def _check(migration: Any, close_names: Any) -> None:
    """Every key and class the options name is in the threads; a new key is not one they have."""
    seen = migration.seen_keys
    for old, new in migration.keys.items():
        if old not in seen:
            raise StatectlError(f"--rename-key {old}={new}: no key {old!r} in these threads{close_names(old, seen)}")
        if new in seen and new not in migration.keys and new not in migration.drop:
            raise StatectlError(
                f"--rename-key {old}={new}: the threads already have a key {new!r}",
                f"drop it first (--drop-key {new}), or choose another name",
            )
    for key in sorted(migration.drop):
        if key not in seen:
            raise StatectlError(f"--drop-key {key}: no key {key!r} in these threads{close_names(key, seen)}")
    named = {f"{m}.{n}" for m, n in migration.seen_classes}
    modules = {m for m, _ in migration.seen_classes}
    for old, new in migration.classes.items():
        if old in named or any(m == old or m.startswith(old + ".") for m in modules):
            continue
        raise StatectlError(
            f"--rename-class {old}={new}: no stored value names {old!r}{close_names(old, named | modules)}"
        )


def _report(
    label: str, outcomes: list[Any], json: bool, *, dry: bool = False, to: str | None = None, in_place: bool = False
) -> None:
    if json:
        out: dict[str, Any] = {"db": label, "applied": not dry, "threads": [o.to_json() for o in outcomes]}
        if to is not None:
            out["to"] = to
        emit_json(out)
        return
    from statectl.escape import escape

    lines = []
    for o in outcomes:
        c = o.counts
        parts = []
        if c.checkpoints or c.writes:
            parts.append(f"{c.checkpoints} checkpoint(s), {c.writes} write(s) rewritten")
        if c.dropped_writes:
            parts.append(f"{c.dropped_writes} write(s) dropped")
        for what, n in sorted(c.classes.items()):
            parts.append(f"{what}: {n} value(s)")
        for what, n in sorted(c.keys.items()):
            parts.append(f"key {what[1:] + ' dropped' if what.startswith('-') else what}: {n} row(s)")
        if c.unreadable:
            parts.append(f"{c.unreadable} unreadable value(s) left as stored")
        if c.pickled:
            parts.append(f"{c.pickled} pickled value(s) left as stored")
        if o.note:
            parts.append(o.note)
        lines.append(escape(f"{o.thread_id}: {o.status}" + (f" — {'; '.join(parts)}" if parts else "")))
    typer.echo("\n".join(lines))
    n = sum(o.counts.changed or bool(o.repickled) for o in outcomes)
    where = f" to {to}" if to else " in place" if in_place else ""
    verb = "would migrate" if dry else "migrated"
    typer.echo(
        f"{verb} {n} thread{'s' * (n != 1)} of {label}{where}" + (" (dry run: nothing written)" if dry else ""),
        err=True,
    )
