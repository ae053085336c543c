"""A deepagents agent with todos, files and a research subagent."""

from __future__ import annotations

from deepagents import create_deep_agent
from langchain.agents.middleware import TodoListMiddleware

from scripted import ScriptedChatModel


def make_deep_agent(script=(), checkpointer=None):
    """Build the deep agent; the main agent and its subagent share one scripted model."""
    model = ScriptedChatModel(script=list(script))
    return create_deep_agent(
        model=model,
        system_prompt="You are a careful research lead.",
        middleware=[TodoListMiddleware()],
        subagents=[{
            "name": "researcher",
            "description": "Researches one question and reports back.",
            "system_prompt": "You research one question.",
            "model": model,
        }],
        checkpointer=checkpointer,
    )


deep_agent = make_deep_agent()
