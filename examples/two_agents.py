"""Two agents share one memory over three runs; each keeps cursors, so later runs get only changes.

Run it from a checkout (or after ``pip install .``)::

    python examples/two_agents.py                 # in a temporary folder
    python examples/two_agents.py --root DIR      # keep the memory (a bare git repo) in DIR

Each agent is a :class:`~gitmem.tools.FileMemoryCapability` over its own handle on
the same mount (as two processes would hold it) and keeps its
:class:`~gitmem.tools.MemoryCursors` in a JSON file between runs, as an app stores
them next to a conversation. No model is called: each agent's tool calls are
written out, so the output shows exactly the context blocks a model would get at
the start of each run:

- run 1: both agents get ``kind="full"`` (no cursor yet): the always-load README and
  an index of the files. They edit different lines of one file: both edits land;
- run 2: each gets ``kind="changes"``: the paths written since its last context (its
  own writes too: nothing marks a change as "mine"), a deleted file listed as deleted.
  A stale edit is refused with the file as it is now;
- run 3: the planner sees its own delete; nothing changed since the booker's last
  context, so the booker gets no block at all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem import Root
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMount, MemoryCursors

CALL = "%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)"
README = "---\ndescription: What this shared memory is for\n---\nShared notes of the trip-planning agents.\n"


class Agent:
    """One agent: its own store handle, its cursors file, and a counter for tool call ids."""

    def __init__(self, name: str, root: Root, state: Path) -> None:
        self.name = name
        self.cursor_file = state / f"{name}.cursors.json"
        saved = json.loads(self.cursor_file.read_text()) if self.cursor_file.exists() else {}
        mount = FileMount("trip", root.mount("trip"), "write", always_load=("README.md",))
        self.memory = FileMemoryCapability([mount], cursors=MemoryCursors(saved))
        self.calls = 0
        self.run_id = ""

    def start_run(self, number: int) -> None:
        """Print the context block this run starts with, then remember what was delivered."""
        self.run_id = f"{self.name}-run-{number}"
        context = self.memory.context()  # records the cursors it delivered
        self.cursor_file.write_text(json.dumps(self.memory.cursors.snapshot() if self.memory.cursors else {}))
        print(f"\n--- {self.name}, run {number}: context ({context.size} bytes) ---")
        print(context.text.rstrip("\n") if context.blocks else "(no block: nothing changed since the last run)")

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """One tool call as a model would make it; prints a one-line summary."""
        self.calls += 1
        origin = Origin(run_id=self.run_id, principal_id=self.name)
        result = self.memory.call(
            f"memory_file_{name}",
            {"memory": "trip", **arguments},
            tool_call_id=f"{self.run_id}-{self.calls}",
            origin=origin,
        )
        shown = result.get("error") or result.get("status") or "ok"
        print(f"  {self.name}: memory_file_{name}({arguments.get('path', '')}) -> {shown}")
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help="folder of memories (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitmem-two-agents-") as tmp:
        where = args.root or Path(tmp) / "memories"
        root = Root(where)
        store = root.mount("trip", create=True)
        if not store.sync.list():
            store.sync.write("README.md", README, expected=None, origin=Origin(principal_id="setup"))
        state = Path(tmp) / "state"
        state.mkdir()

        # Run 1: nothing delivered yet, so both get the full context. They edit different
        # lines of one file at the same time: both edits land.
        planner, booker = Agent("planner", root, state), Agent("booker", root, state)
        planner.start_run(1)
        planner.tool("create", path="plan.md", content="day 1: Lisbon\nday 2: Sintra\nday 3: Porto\n")
        planner.tool("create", path="ideas/food.md", content="pasteis de nata\n")
        booker.start_run(1)
        seen = booker.tool("view", path="plan.md")
        planner.tool("edit", path="plan.md", old_string="day 1: Lisbon", new_string="day 1: Lisbon (arrive 10:00)")
        booker.tool("edit", path="plan.md", old_string="day 3: Porto", new_string="day 3: Porto (train booked)")
        both = booker.tool("view", path="plan.md")
        print(f"  plan.md was {seen['version'][:10]} when booker read it, is now {both['version'][:10]}:")
        print("    " + both["content"].rstrip("\n").replace("\n", "\n    "))
        booker.tool("create", path="bookings.md", content="hotel: pending\ntrain: booked\n")

        # Run 2: each agent is sent what changed since its last context, deletions marked.
        planner, booker = Agent("planner", root, state), Agent("booker", root, state)
        planner.start_run(2)
        idea = planner.tool("view", path="ideas/food.md")
        planner.tool("delete", path="ideas/food.md", version=idea["version"])
        booker.start_run(2)
        stale = booker.tool("edit", path="plan.md", old_string="day 1: Lisbon\n", new_string="day 1: Faro\n")
        print(f"  the stale edit got {stale['error']!r}, nothing was written, and 'current' holds plan.md as it is now")

        # Run 3: the planner sees its delete; nothing changed since the booker's last context: no block.
        planner, booker = Agent("planner", root, state), Agent("booker", root, state)
        planner.start_run(3)
        booker.start_run(3)

        log = subprocess.run(
            ["git", "-C", str(where / "trip.git"), "log", f"--format=%an %s  [{CALL}]"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        print(f"\n--- git log of {where / 'trip.git'} ---\n{log.rstrip()}")


if __name__ == "__main__":
    main()
