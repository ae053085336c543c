"""`doctor`'s load-safety checks: the classes stored values name, looked up in the project's
interpreter; a thread's newest state against the graph's schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

from statectl.core.findings import ERROR, INFO, THREADS_SHOWN, WARNING, Finding, Named, Options, Report

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.core.schema import Schema
    from statectl.model import ThreadSummary

# -- load safety ----------------------------------------------------------------------------------
LOADS_AS = {
    "msgpack-pydantic": ("silently loads as a plain dict", ERROR),
    "msgpack-ctor": ("loads as its raw data, with a warning in the log", ERROR),
    "json-lc": ("loads as a plain dict", ERROR),
    "pickle": ("fails to load: the checkpoint cannot be read", ERROR),
}


def load_safety(named: dict[tuple[str, str], Named], options: Options, report: Report) -> None:
    from statectl.codec.classes import is_safe, runs_code

    for (module, name), n in sorted(named.items()):
        if runs_code(module, name):
            report.findings += _runs_code(module, name, n)
    asked = sorted(k for k in named if not is_safe(*k) and not _langchain_lc(k, named[k]) and not runs_code(*k))
    if not asked:
        return
    if options.classes is None:
        report.not_checked.append(
            f"load safety of {len(asked)} class(es) the values name: no project interpreter (--python PATH)"
        )
        return
    answers = options.classes(asked)
    unregistered = []
    for (module, name), answer in zip(asked, answers, strict=True):
        n = named[(module, name)]
        status = answer.get("status")
        threads = list(n.threads)
        how = sorted(n.how)
        if status == "ok":
            constructed = [h for h in how if h != "pickle"]  # (a pickle names functions: copyreg's...)
            if answer.get("kind") == "function" and constructed:
                report.findings.append(
                    Finding(
                        WARNING,
                        "load",
                        "not-a-class",
                        f"{module}.{name} is a function, not a class: LangGraph stores classes here, and loading "
                        f"{n.rows} stored value(s) calls it with their data",
                        "find who wrote these rows; never list it in allowed_msgpack_modules",
                        threads=threads,
                        count=len(threads),
                    )
                )
            elif any(h.startswith("msgpack") for h in how):
                unregistered.append(f"{module}.{name}")
            continue
        effect, severity = LOADS_AS[how[-1]] if how else ("", WARNING)
        if status == "__main__":
            report.findings.append(
                Finding(
                    WARNING,
                    "load",
                    "main-module",
                    f"{module}.{name} was defined in a script run as the program (`__main__`): it {effect} in any "
                    f"other entry point ({n.rows} row(s))",
                    "move the class into a module and import it; old rows keep the name",
                    threads=threads,
                    count=len(threads),
                )
            )
        elif status in ("missing module", "missing class"):
            where = (
                f"no module {answer.get('missing')}"
                if status == "missing module"
                else f"no {name} in {answer.get('file')}"
            )
            report.findings.append(
                Finding(
                    severity,
                    "load",
                    "class-missing",
                    f"{module}.{name}: {where}; {n.rows} stored value(s) name it, and each {effect}",
                    "restore the class under that name (an alias: `from new.place import X` in the old module), or "
                    f"migrate the rows: {migrate_line(module, name, n)}",
                    threads=threads,
                    count=len(threads),
                )
            )
        else:
            report.findings.append(
                Finding(
                    INFO,
                    "load",
                    "class-unknown",
                    f"{module}.{name}: only importing it could tell whether it loads ({answer.get('why')})",
                    None,
                    threads=threads,
                    count=len(threads),
                )
            )
    if unregistered:
        shown = ", ".join(unregistered[:8]) + (" …" if len(unregistered) > 8 else "")
        report.findings.append(
            Finding(
                INFO,
                "load",
                "strict-msgpack",
                f"{len(unregistered)} class(es) outside LangGraph's safe list are loaded by import and call, which "
                f"LANGGRAPH_STRICT_MSGPACK=true (announced as the future default) blocks: {shown}",
                "list them in the serializer's allowed_msgpack_modules: statectl doctor --types --format python prints "
                "the line",
                count=len(unregistered),
            )
        )


def migrate_line(module: str, name: str, n: Named) -> str:
    """The `statectl migrate` command that renames the class in the rows of the threads that
    name it (NEW.module: where the class lives now)."""
    import shlex

    threads = " ".join(shlex.quote(t) for t in n.threads)
    more = " (and every other thread that names it)" if len(n.threads) >= THREADS_SHOWN else ""
    return f"statectl migrate {threads} --rename-class {module}.{name}=NEW.module.{name}{more}"


def _runs_code(module: str, name: str, n: Named) -> list[Finding]:
    """A stored value naming a callable that runs code: an error at each thread's newest
    checkpoint that names it."""
    return [
        Finding(
            ERROR,
            "load",
            "runs-code",
            f"a stored value names {module}.{name}, a callable that runs code: this checkpoint tries to run code "
            f"when LangGraph loads it ({n.rows} row(s) in all name it)",
            "do not load this thread; find who wrote the row and delete it (never list the name in "
            "allowed_msgpack_modules, never load it with pickle_fallback)",
            t,
            ns,
            cid,
        )
        for t, (ns, cid) in n.threads.items()
    ]


def _langchain_lc(key: tuple[str, str], n: Named) -> bool:
    """An `lc` id of LangChain's own (`langchain.schema.messages`...): revived through LangChain's
    own mapping, not imported by that name."""
    return n.how == {"json-lc"} and key[0].split(".")[0] in ("langchain", "langchain_core")


def schema_fit(store: StoreReader, summary: ThreadSummary, schema: Schema, out: list[Finding]) -> None:
    from statectl.core.schema import check_thread

    found = check_thread(schema, store.view(summary.thread_id), summary.status)
    for p in found.problems:
        what = ", ".join(f"{k}={v}" for k, v in p.items() if k != "problem")
        severity = ERROR if found.waiting else WARNING
        out.append(
            Finding(
                severity,
                "schema",
                p["problem"],
                f"the newest state does not fit the graph's schema: {p['problem']} ({what})"
                + (" — the thread waits and would resume on it" if found.waiting else ""),
                "statectl schema TARGET --all-threads shows each",
                summary.thread_id,
            )
        )
