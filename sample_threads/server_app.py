"""The graphs `langgraph dev` serves for the server sample (sample_threads/langgraph.json).

The same graphs as the SQLite samples, compiled without a checkpointer (the server brings its
own) and with scripted models: each graph's script is consumed in the order `serve.py` runs
its threads.
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

import custom_app as C  # noqa: E402
import interrupts_app as I  # noqa: E402
from agent_app import make_agent  # noqa: E402
from scripted import call, say  # noqa: E402

agent = make_agent([
    # "email-approved": a tool call that needs approval, approved, then the answer
    call(("send_email", {"to": "maria@example.com", "subject": "Pão Bom plan",
                         "body": "Hi Maria, here is the plan."})),
    say("Done: Maria has the plan."),
    # "email-waiting": waits for approval
    call(("send_email", {"to": "investors@example.com", "subject": "Seed round",
                         "body": "We are raising 500k."})),
    # "market-lookup": a tool call that runs, then the answer
    call(("lookup_market", {"region": "Lisbon"})),
])
subgraph = I.subgraph_builder.compile()
parallel = I.parallel_builder.compile()
notes = C.notes_builder.compile()
failing = C.failing_builder.compile()


class TallyState(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]


def label(state: TallyState) -> dict:
    return {"topic": state["topic"].title()}


# reducer channels no step ever writes: LangGraph reads them as `[]` and `0` (their `typ()`)
tally = StateGraph(TallyState).add_node("label", label).add_edge(START, "label").add_edge("label", END).compile()
