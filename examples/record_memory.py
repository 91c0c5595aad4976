"""Record memory in a few lines: add, recall at the start of a run, update, history, purge.

    .venv/bin/python examples/record_memory.py [--root DIR]

Uses a temporary root unless --root is given. No model is called: the script
prints what an agent harness would put in front of a run and what the
memory_record_* tools answer.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from gitmem import Root
from gitmem.records import RecordStore
from gitmem.tools.records import RecordMemoryCapability, RecordMount


def main(root_dir: str) -> None:
    mount = Root(root_dir).mount("facts", create=True, kind="record")  # a record memory (one git repo)
    alice = RecordStore(mount.sync, namespace="alice")
    bob = RecordStore(mount.sync, namespace="bob")

    tea = alice.add("prefers green tea")
    alice.add("works at the Berlin office")
    bob.add("prefers black coffee")

    # What a run whose input is about drinks would start with:
    memory = RecordMemoryCapability([RecordMount("facts", alice, "write")])
    report = asyncio.run(memory.recall("I would like a tea. What should I order?"))
    print(report.text)

    # The model changes records through the tools; every change is a commit.
    print(memory.call("memory_record_update", {"memory": "facts", "id": tea.id, "text": "prefers oolong tea"}))
    print([r.text for r in alice.search("tea")])
    for change in alice.log(tea.id):
        print(change.time.isoformat(timespec="seconds"), change.op, change.summary)

    alice.purge()  # alice's records and their history are erased; bob's stay
    print("alice:", alice.list().records, "bob:", [r.text for r in bob.list().records])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="folder of memories (default: a temporary one)")
    args = parser.parse_args()
    if args.root:
        main(args.root)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(tmp)
