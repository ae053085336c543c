"""Run the sample graphs on a real `langgraph dev` server, and keep the folder it writes.

    python sample_threads/serve.py         # writes sample_threads/.langgraph_api and
                                           # expected/langgraph_api.jsonl

The server (langgraph-cli[inmem]) runs in a temporary copy of the app, offline; threads are
driven over HTTP with langgraph-sdk; SIGINT makes it write its `.langgraph_api` folder. LangGraph
itself then reads that folder's checkpoints (loaded with statectl's inert unpickler into an
`InMemorySaver`) and its `get_state_history` is recorded for the parity tests. `start()` and
`drive()` are also what the server tests use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, uuid5

HERE = Path(__file__).resolve().parent
APP_FILES = ("langgraph.json", "server_app.py", "agent_app.py", "custom_app.py", "interrupts_app.py",
             "scripted.py")
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
           "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_API_KEY": "",
           "LANGGRAPH_API_KEY": "", "PYTHONUNBUFFERED": "1"}
APPROVE = {"decisions": [{"type": "approve"}]}


def thread_id(name: str) -> str:
    """The server wants UUID thread ids: one per sample name, the same every run."""
    return str(uuid5(NAMESPACE_URL, f"statectl-sample/{name}"))


def copy_app(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in APP_FILES:
        shutil.copy(HERE / name, dest / name)
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `langgraph dev`: its URL, its folder, and its log."""

    def __init__(self, proc: subprocess.Popen, url: str, app_dir: Path, log: Path) -> None:
        self.proc, self.url, self.app_dir, self.log = proc, url, app_dir, log

    def stop(self, timeout: float = 60) -> None:
        """SIGINT, as Ctrl+C would: the server writes its files on a clean shutdown."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@contextmanager
def start(app_dir: Path, timeout: float = 240) -> Iterator[Server]:
    """Start `langgraph dev` in `app_dir` on a free port and wait until it answers."""
    exe = Path(sys.executable).with_name("langgraph")
    port = free_port()
    log = app_dir / "server.log"
    env = {**os.environ, **OFFLINE}
    with log.open("wb") as out:
        proc = subprocess.Popen([str(exe), "dev", "--port", str(port), "--no-browser", "--no-reload",
                                 "--config", "langgraph.json"], cwd=app_dir, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Server(proc, f"http://127.0.0.1:{port}", app_dir, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            # it moves to another port if this one was taken meanwhile: read the one it took
            if m := re.search(rb"API: (http://127\.0\.0\.1:\d+)", log.read_bytes()):
                server.url = m.group(1).decode()
            if _ok(server.url):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"langgraph dev did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield server
    finally:
        server.stop()


def drive(url: str) -> dict[str, str]:
    """Run the sample threads through the server's API; sample name -> thread id."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url, api_key=None)
    made: dict[str, str] = {}

    def thread(name: str, graph: str) -> str:
        tid = thread_id(name)
        client.threads.create(thread_id=tid, metadata={"sample": name, "graph_id": graph},
                              if_exists="do_nothing")
        made[name] = tid
        return tid

    def run(tid: str, graph: str, **kw: Any) -> None:
        client.runs.wait(tid, graph, raise_error=False, **kw)

    user = lambda text: {"messages": [{"role": "user", "content": text}]}  # noqa: E731
    tid = thread("email-approved", "agent")
    run(tid, "agent", input=user("Email the plan to my cofounder maria@example.com"))
    run(tid, "agent", command={"resume": APPROVE})
    tid = thread("email-waiting", "agent")
    run(tid, "agent", input=user("Email our investors about the seed round."))
    tid = thread("market-lookup-fails", "agent")
    run(tid, "agent", input=user("How big is the bakery market in Lisbon?"))

    tid = thread("subgraph-resumed", "subgraph")
    run(tid, "subgraph", input={"draft": "bakery sign"})
    run(tid, "subgraph", command={"resume": "keep"})
    tid = thread("subgraph-waiting", "subgraph")
    run(tid, "subgraph", input={"draft": "spring menu"})

    tid = thread("parallel-resumed", "parallel")
    run(tid, "parallel", input={"questions": ["size?", "color?"]})
    for pending in client.threads.get_state(tid)["interrupts"]:  # one answer per run, by id
        run(tid, "parallel", command={"resume": {pending["id"]: f"answer to {pending['value']}"}})

    tid = thread("notes-updated", "notes")
    run(tid, "notes", input={"topic": "pricing", "count": 0})
    client.threads.update_state(tid, {"log": ["manual note"]}, as_node="review")

    tid = thread("parse-fails", "failing")
    run(tid, "failing", input={"url": "https://example.com/bread"})

    tid = thread("reducers-unwritten", "tally")
    run(tid, "tally", input={"topic": "rye loaves"})
    return made


def record_folder(folder: Path, out: Path) -> int:
    """LangGraph's own history of every thread and namespace in a `.langgraph_api` folder."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    from langgraph.checkpoint.memory import InMemorySaver

    import server_app
    from record import snapshot_record
    from statectl.codec.unpickle import loads

    def read(n: int) -> dict:
        path = folder / f".langgraph_checkpoint.{n}.pckl"
        return loads(path.read_bytes()) if path.exists() else {}

    saver = InMemorySaver()
    for tid, by_ns in read(1).items():
        for ns, rows in by_ns.items():
            saver.storage[tid][ns].update(rows)
    saver.writes.update(read(2))
    saver.blobs.update(read(3))
    ops = loads((folder / ".langgraph_ops.pckl").read_bytes())
    graph_of = {_uuid(t["thread_id"]): t["metadata"]["graph_id"] for t in ops["threads"]}
    count = 0
    with out.open("w") as fh:
        for tid in sorted(saver.storage):
            graph = getattr(server_app, graph_of[tid]).copy(update={"checkpointer": saver})
            for ns in sorted(saver.storage[tid]):
                config = {"configurable": {"thread_id": tid, "checkpoint_ns": ns}}
                for snap in graph.get_state_history(config):
                    fh.write(json.dumps(snapshot_record(snap), ensure_ascii=False, sort_keys=True) + "\n")
                    count += 1
    return count


def _uuid(stub: Any) -> str:
    """A thread id as the inert unpickler leaves a pickled `uuid.UUID` (its int in the state)."""
    if isinstance(stub, str):
        return stub
    n = stub.state["int"]
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = copy_app(Path(tmp) / "app")
        with start(app) as server:
            print(f"langgraph dev at {server.url}")
            for name, tid in drive(server.url).items():
                print(f"  {name}: {tid}")
        folder = HERE / ".langgraph_api"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(app / ".langgraph_api", folder)
    n = record_folder(folder, HERE / "expected" / "langgraph_api.jsonl")
    print(f"wrote {folder} and recorded {n} snapshots from LangGraph")


if __name__ == "__main__":
    main()
