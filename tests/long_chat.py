"""The state of the long thread test_size.py writes (a module: LangGraph reads its annotations)."""

from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph import add_messages


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: str
