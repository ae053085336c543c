"""A scripted chat model: replies come from a list, so sample runs need no network."""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

_ids = itertools.count(1)


def say(text: str, **usage: int) -> AIMessage:
    """A plain assistant reply."""
    meta = {"input_tokens": usage.get("i", 40), "output_tokens": usage.get("o", 12),
            "total_tokens": usage.get("i", 40) + usage.get("o", 12)}
    return AIMessage(content=text, usage_metadata=meta)


def call(*calls: tuple[str, dict[str, Any]], text: str = "") -> AIMessage:
    """An assistant turn that calls tools: ``call(("name", {args}), ...)``."""
    return AIMessage(
        content=text,
        tool_calls=[{"name": n, "args": a, "id": f"call_{next(_ids):03d}", "type": "tool_call"}
                    for n, a in calls],
        usage_metadata={"input_tokens": 55, "output_tokens": 20, "total_tokens": 75},
    )


class ScriptedChatModel(BaseChatModel):
    """Answers each call with the next scripted message; tools binding is a no-op."""

    script: list[AIMessage]
    position: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":  # noqa: ARG002
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.position >= len(self.script):
            raise RuntimeError(f"script exhausted after {self.position} replies")
        reply = self.script[self.position].model_copy()
        self.position += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])
