"""Session memory end to end: remember, merge a duplicate, recall before a turn, extract after it.

Run it from the repository root: ``.venv/bin/python examples/session_memory.py [FOLDER]``.
Everything lands in ``FOLDER/session.git`` (a temporary folder by default), which
plain git can log and diff.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

from gitmem.session import LessonExtractor, SessionRunner, TurnContext, open_session_memory


def main(folder: str) -> None:
    memory = open_session_memory(folder)
    memory.remember_success(
        "release preflight", ["bash", "search"], "Release checks passed after provider verification"
    )
    memory.remember_failure("provider verification", "missing PROVIDER_BASE_URL", ["bash"])
    first = memory.remember("Use pnpm, not npm, in this repository.", importance=0.6, tags=["tooling"])
    again = memory.remember("use pnpm,  not npm, in this repository.", importance=0.8)  # an exact duplicate
    assert again.id == first.id and again.metadata["duplicate_count"] == 1

    for hit in memory.recall_similar("release provider verification", 5):
        print(f"{hit.score:.2f}  {hit.item.content.splitlines()[0]}")

    def model(turn: TurnContext) -> str:  # any callable: a real model client in practice
        if "releases need PROVIDER_BASE_URL" in turn.memory_block:
            return "Set PROVIDER_BASE_URL first (a lesson from the last turn), then release."
        return "Lesson: releases need PROVIDER_BASE_URL set before provider verification"

    runner = SessionRunner(
        memory,
        model,
        workspace=folder,
        session_id="demo",
        extractor=LessonExtractor(),
        on_event=lambda e: print("event:", e.kind, e.data.get("id", e.data.get("count"))),
    )
    print(runner.turn("how do I get the release out?").response)  # extracts the lesson
    second = runner.turn("what must be set before a release?")  # recalls it
    print(second.recall.block)
    print(second.response)
    runner.close()
    print(
        subprocess.run(
            ["git", "-C", f"{folder}/session.git", "log", "--oneline"], capture_output=True, text=True
        ).stdout
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="session-memory-"))
