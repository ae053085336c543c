"""A `create_agent` business assistant whose middlewares each add state fields."""

from __future__ import annotations

from typing import Annotated, Any

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware, TodoListMiddleware
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command
from typing_extensions import NotRequired

from scripted import ScriptedChatModel


class BusinessIdeaState(AgentState):
    business_idea_complete: NotRequired[bool]
    materialized_business_idea: NotRequired[dict[str, Any] | None]


@tool
def save_business_idea(name: str, pitch: str, target_market: str,
                       tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Record the finished business idea."""
    idea = {"name": name, "pitch": pitch, "target_market": target_market}
    return Command(update={
        "business_idea_complete": True,
        "materialized_business_idea": idea,
        "messages": [ToolMessage(f"Saved idea {name!r}.", tool_call_id=tool_call_id)],
    })


class BusinessIdeaMiddleware(AgentMiddleware):
    """Tracks whether the user's business idea is complete."""

    state_schema = BusinessIdeaState
    tools = [save_business_idea]

    def before_agent(self, state, runtime):  # noqa: ARG002
        if "business_idea_complete" not in state:
            return {"business_idea_complete": False, "materialized_business_idea": None}
        return None


class LanguageState(AgentState):
    detected_language: NotRequired[str]


class LanguageDetectorMiddleware(AgentMiddleware):
    """Guesses the language of the last human message before each model call."""

    state_schema = LanguageState

    def before_model(self, state, runtime):  # noqa: ARG002
        human = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        if not human:
            return None
        text = str(human[-1].content).lower()
        lang = "es" if any(w in text for w in ("hola", "quiero", "panader")) else "en"
        if state.get("detected_language") != lang:
            return {"detected_language": lang}
        return None


class SkillsState(AgentState):
    skills_metadata: NotRequired[Annotated[list[dict[str, str]], OmitFromInput]]


class SkillsMiddleware(AgentMiddleware):
    """Loads the skills catalogue once per run."""

    state_schema = SkillsState

    def before_agent(self, state, runtime):  # noqa: ARG002
        if state.get("skills_metadata"):
            return None
        return {"skills_metadata": [
            {"name": "market-research", "path": "/skills/market-research/SKILL.md"},
            {"name": "pricing", "path": "/skills/pricing/SKILL.md"},
        ]}


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email (needs human approval)."""
    return f"Email to {to} sent: {subject}"


@tool
def lookup_market(region: str) -> str:
    """Look up market data for a region."""
    raise RuntimeError(f"market data service unavailable for region {region!r}")


def make_agent(script=(), checkpointer=None):
    """Build the agent with a scripted model."""
    return create_agent(
        ScriptedChatModel(script=list(script)),
        tools=[send_email, lookup_market],
        system_prompt="You help founders turn ideas into businesses.",
        middleware=[
            BusinessIdeaMiddleware(),
            LanguageDetectorMiddleware(),
            SkillsMiddleware(),
            TodoListMiddleware(),
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True}),
        ],
        checkpointer=checkpointer,
    )


agent = make_agent()
