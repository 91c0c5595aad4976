"""One agent loop per framework, with a fake model and no network: a memory written in one run is recalled in the next.

Each run opens its own store or session on the same gitmem root, as a new process would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TypedDict

from agents import Agent, Runner
from agents.testing import ScriptedModel
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph

from gitmem.adapters.langgraph_store import GitMemStore
from gitmem.adapters.openai_session import GitMemSession
from tests.adapters.frameworks.agents_helpers import get_text_message
from tests.adapters.frameworks.support import git


class Turn(TypedDict, total=False):
    user: str
    text: str
    reply: str


def fake_model(text: str, memories: list[str]) -> tuple[str | None, str]:
    """A "model": asked to remember, it returns a memory to save; otherwise it answers from what was recalled."""
    if text.startswith("remember "):
        return text.removeprefix("remember "), "noted"
    return None, memories[0] if memories else "I don't know"


def agent_node(state: Turn) -> Turn:
    store = get_store()
    namespace = ("memories", state["user"])
    recalled = [item.value["text"] for item in store.search(namespace, query=state["text"], limit=3)]
    to_save, reply = fake_model(state["text"], recalled)
    if to_save is not None:
        store.put(namespace, f"m{len(store.search(namespace, limit=100))}", {"text": to_save})
    return {"reply": reply}


def graph(store: GitMemStore) -> object:
    builder = StateGraph(Turn)
    builder.add_node("agent", agent_node)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(store=store)


def test_a_langgraph_agent_recalls_in_run_two_what_it_stored_in_run_one(tmp_path: Path) -> None:
    first = graph(GitMemStore.open(tmp_path))
    out = first.invoke(  # type: ignore[attr-defined]
        {"user": "ada", "text": "remember my favourite tea is genmaicha"},
        {"configurable": {"thread_id": "thread-1"}},
    )
    assert out["reply"] == "noted"
    second = graph(GitMemStore.open(tmp_path))  # a new store: nothing carried in memory
    out = second.invoke({"user": "ada", "text": "which tea do I like?"}, {"configurable": {"thread_id": "thread-2"}})  # type: ignore[attr-defined]
    assert out["reply"] == "my favourite tea is genmaicha"
    other = second.invoke({"user": "bob", "text": "which tea do I like?"}, {"configurable": {"thread_id": "t3"}})  # type: ignore[attr-defined]
    assert other["reply"] == "I don't know"  # another user's namespace holds nothing
    # the write is a commit naming the graph thread that made it
    message = git(tmp_path / "langgraph.git", "log", "-1", "--format=%B", "main")
    assert "Gitmem-Op: langgraph-put" in message and "Gitmem-Run: thread-1" in message


def test_an_agents_sdk_agent_sees_run_one_in_run_two(tmp_path: Path) -> None:
    model = ScriptedModel()
    agent = Agent(name="assistant", model=model)
    model.enqueue([get_text_message("Nice to meet you, Ada.")])
    first = asyncio.run(Runner.run(agent, "My name is Ada.", session=GitMemSession.open("ada", tmp_path)))
    assert first.final_output == "Nice to meet you, Ada."
    model.enqueue([get_text_message("Your name is Ada.")])
    second = asyncio.run(Runner.run(agent, "What is my name?", session=GitMemSession.open("ada", tmp_path)))
    assert second.final_output == "Your name is Ada."
    seen = str(model.calls[-1].input)
    assert "My name is Ada." in seen and "Nice to meet you, Ada." in seen  # the history came from git
    subjects = git(tmp_path / "session.git", "log", "--format=%s", "main").splitlines()
    # the SDK saves each run's input, then its output: one add_items batch, one commit each
    assert [s.split()[0] for s in subjects] == ["session-add"] * 4 + ["init"]
