"""A session bound to durable memory is resumed only with an equivalent binding, by every surface.

Each surface that starts a session - :class:`SessionRunner`, the MCP server in
process, a ``gitmem mcp`` process, and a new Python process resuming a runner -
first runs session ``s-1`` bound to a durable namespace, then is started again
for ``s-1`` without a binding, with another namespace, with another policy
(refused: ``forbidden``, nothing written, the model never called) and with an
equivalent binding (resumed). A binding record that cannot be read refuses too,
within seconds (a FIFO planted there does not block), and is never taken for
"not bound".
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.durable import DurableBinding, DurableRepository, Namespace, RecallPolicy
from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.session import SessionMemory, open_session_memory
from gitmem.session.resume import BINDINGS_DIR, SessionBindings
from gitmem.session.runner import SessionRunner, TurnContext

NS = Namespace("acme", "alice", "repo-api")
OTHER = Namespace("acme", "bob", "repo-api")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0

Binding = tuple[Namespace, RecallPolicy] | None
#: (what the resume brings, refused?)
RESUMES: list[tuple[str, Binding, bool]] = [
    ("no binding", None, True),
    ("another namespace", (OTHER, RecallPolicy()), True),
    ("another policy", (NS, RecallPolicy(max_results=9)), True),
    ("an equivalent binding", (NS, RecallPolicy()), False),
]


def model(calls: list[str]) -> Callable[[TurnContext], str]:
    def answer(ctx: TurnContext) -> str:
        calls.append(ctx.prompt)
        return "done"

    return answer


def start_runner(root: Path, session_dir: Path, binding: Binding, calls: list[str]) -> None:
    """Start session s-1 with ``binding`` and run one turn."""
    memory = open_session_memory(session_dir)
    bound = None
    if binding is not None:
        bound = DurableBinding.for_session(DurableRepository.open(root, "team", create=True), "s-1", *binding)
    runner = SessionRunner(
        memory, model(calls), workspace="w", session_id="s-1", durable=bound, candidates=bound, admission=bound
    )
    try:
        runner.turn("what is the release checklist?")
    finally:
        runner.close()


def start_mcp_in_process(root: Path, session_dir: Path, binding: Binding, calls: list[str]) -> None:
    from gitmem.adapters.mcp_server import MemoryMcpServer
    from gitmem.model import Origin
    from gitmem.tools.durable import DurableTools
    from gitmem.tools.session import SessionTools

    durable = None
    if binding is not None:
        durable = DurableTools(DurableBinding(DurableRepository.open(root, "team", create=True), *binding))
    session = SessionTools(open_session_memory(session_dir))
    MemoryMcpServer(None, session=session, durable=durable, origin=Origin(run_id="s-1"))
    calls.append("started")


def start_mcp_process(root: Path, session_dir: Path, binding: Binding, calls: list[str]) -> None:
    Root(root).mount("notes", create=True)
    args = ["--root", str(root), "--mount", "notes", "--session-memory", str(session_dir), "--run", "s-1"]
    if binding is not None:
        namespace, _ = binding  # gitmem mcp binds with the default policy
        args += ["--durable", "team", "--durable-namespace", *namespace.as_dict().values()]
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "mcp", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    if done.returncode != 0:
        assert done.returncode == 1 and "error [forbidden]" in done.stderr, done.stderr
        raise MemoryStoreError("forbidden", done.stderr)
    calls.append("started")


RESUMER = """
import sys
from gitmem.durable import DurableBinding, DurableRepository, Namespace
from gitmem.errors import MemoryStoreError
from gitmem.session import open_session_memory
from gitmem.session.runner import SessionRunner
root, session_dir, bind = sys.argv[1:4]
try:
    bound = DurableBinding.for_session(DurableRepository.open(root, "team"), "s-1", Namespace(*bind.split("/"))) if bind else None
    runner = SessionRunner(open_session_memory(session_dir), lambda ctx: "done", workspace="w",
                           session_id="s-1", durable=bound, candidates=bound, admission=bound)
except MemoryStoreError as exc:
    print(exc.code, exc.message)
    sys.exit(3)
runner.turn("hello there")
runner.close()
"""


def start_runner_process(root: Path, session_dir: Path, binding: Binding, calls: list[str]) -> None:
    bind = "/".join(binding[0].as_dict().values()) if binding is not None else ""
    if binding is None and not (session_dir / "session.git").exists():
        start_runner(root, session_dir, None, calls)
        return
    if binding is not None and not (session_dir / "session.git").exists():
        start_runner(root, session_dir, binding, calls)  # the first run, in this process
        return
    done = subprocess.run(
        [sys.executable, "-c", RESUMER, str(root), str(session_dir), bind],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    if done.returncode == 3:
        assert done.stdout.startswith("forbidden "), done.stdout
        raise MemoryStoreError("forbidden", done.stdout)
    assert done.returncode == 0, done.stderr
    calls.append("started")


SURFACES: dict[str, Callable[[Path, Path, Binding, list[str]], None]] = {
    "runner": start_runner,
    "runner in a new process": start_runner_process,
    "mcp server": start_mcp_in_process,
    "gitmem mcp process": start_mcp_process,
}


def state(session_dir: Path) -> tuple[str, list[str]]:
    repo = session_dir / "session.git"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout
    records = sorted(p.name for p in repo.joinpath(*BINDINGS_DIR).iterdir())
    return head, records


#: The process surfaces bind with the default policy: "another policy" is tried in process only.
CASES = [
    pytest.param(surface, *resume, id=f"{resume[0]}-{surface}")
    for surface in sorted(SURFACES)
    for resume in RESUMES
    if not (resume[0] == "another policy" and surface in ("gitmem mcp process", "runner in a new process"))
]


@pytest.mark.parametrize(("surface", "what", "resume", "refused"), CASES)
def test_a_bound_session_resumes_only_with_an_equivalent_binding(
    tmp_path: Path, surface: str, what: str, resume: Binding, refused: bool
) -> None:
    start = SURFACES[surface]
    root, session_dir = tmp_path / "root", tmp_path / "session"
    calls: list[str] = []
    start(root, session_dir, (NS, RecallPolicy()), calls)
    assert calls, "the first, bound start ran"
    before = state(session_dir)
    assert len(before[1]) == 1, "the bound session left its record"
    calls.clear()
    if refused:
        with pytest.raises(MemoryStoreError) as raised:
            start(root, session_dir, resume, calls)
        assert raised.value.code == "forbidden" and "s-1" in raised.value.message
        if resume is None:
            assert "acme/alice/repo-api" in raised.value.message  # what it was bound to
        assert calls == []  # no turn ran, no server started
        assert state(session_dir) == before  # nothing written
    else:
        start(root, session_dir, resume, calls)
        assert calls
    subprocess.run(["git", "-C", str(session_dir / "session.git"), "fsck", "--strict"], check=True, capture_output=True)


def test_a_session_first_run_unbound_may_be_bound_later_and_then_stays_bound(tmp_path: Path) -> None:
    root, session_dir = tmp_path / "root", tmp_path / "session"
    calls: list[str] = []
    start_runner(root, session_dir, None, calls)
    start_runner(root, session_dir, None, calls)  # never bound: resumes freely
    start_runner(root, session_dir, (NS, RecallPolicy()), calls)
    with pytest.raises(MemoryStoreError) as raised:
        start_runner(root, session_dir, None, calls)
    assert raised.value.code == "forbidden" and len(calls) == 3


def test_the_in_memory_twin_keeps_the_record_for_its_memory() -> None:
    memory = SessionMemory(InMemoryFileStore())
    repo = DurableRepository(InMemoryFileStore())
    bound = DurableBinding(repo, NS)
    SessionRunner(memory, lambda ctx: "ok", workspace="w", session_id="s-1", durable=bound).close()
    with pytest.raises(MemoryStoreError) as raised:
        SessionRunner(memory, lambda ctx: "ok", workspace="w", session_id="s-1")
    assert raised.value.code == "forbidden"
    SessionRunner(memory, lambda ctx: "ok", workspace="w", session_id="s-2").close()  # another session is free


def _plant(record: Path, how: str, tmp_path: Path) -> None:
    record.unlink()
    if how == "garbage":
        record.write_bytes(b"\x00\xff not json")
    elif how == "empty":
        record.write_bytes(b"")
    elif how == "deep":
        record.write_text("[" * 30_000 + "]" * 30_000)
    elif how == "huge":
        with open(record, "wb") as fh:
            fh.truncate(100 * 1024 * 1024)
    elif how == "fifo":
        os.mkfifo(record)
    elif how == "link":
        outside = tmp_path / "outside.json"
        outside.write_text('{"session_id": "s-1", "binding": {"schema": "gitmem.session.binding.v1"}}')
        record.symlink_to(outside)
    elif how == "another session":
        record.write_text('{"session_id": "s-2", "binding": {"schema": "gitmem.session.binding.v1"}}')
    elif how == "folder":
        record.mkdir()
    elif how.startswith("durable "):  # the right schema, a wrong type where the bindings are
        durable = how.removeprefix("durable ")
        record.write_text(
            f'{{"session_id": "s-1", "binding": {{"schema": "gitmem.session.binding.v1", "durable": {durable}}}}}'
        )


@pytest.mark.parametrize(
    "how",
    [
        "garbage",
        "empty",
        "deep",
        "huge",
        "fifo",
        "link",
        "another session",
        "folder",
        "durable 5",
        "durable null",
        "durable {}",
    ],
)
def test_a_record_that_cannot_be_read_refuses_the_resume(tmp_path: Path, how: str) -> None:
    root, session_dir = tmp_path / "root", tmp_path / "session"
    calls: list[str] = []
    start_runner(root, session_dir, (NS, RecallPolicy()), calls)
    (record,) = (session_dir / "session.git").joinpath(*BINDINGS_DIR).glob("*.json")
    _plant(record, how, tmp_path)
    for binding in (None, (NS, RecallPolicy())):
        began = time.monotonic()
        with pytest.raises(MemoryStoreError) as raised:
            start_runner(root, session_dir, binding, calls)
        assert raised.value.code == "forbidden" and "cannot be read" in raised.value.message
        assert time.monotonic() - began < 10
    assert len(calls) == 1
    if how == "link":
        assert "gitmem.session" in (tmp_path / "outside.json").read_text()  # nothing written through the link


@pytest.mark.parametrize("session_id", ["s-\ud800", "\udc00"])
def test_a_session_id_that_is_no_text_is_refused_with_its_code(tmp_path: Path, session_id: str) -> None:
    """A lone surrogate cannot name a record file: ``invalid_query``, on disk and in the in-memory twin alike."""
    for bindings in (SessionBindings(tmp_path / "bindings"), SessionBindings(None)):
        for identity in (None, {"schema": "gitmem.session.binding.v1", "durable": [{"type": "x"}]}):
            with pytest.raises(MemoryStoreError) as raised:
                bindings.resume(session_id, identity)
            assert raised.value.code == "invalid_query"
    assert not (tmp_path / "bindings").exists()


def test_two_processes_binding_one_new_session_differently_leave_one_record(tmp_path: Path) -> None:
    """Records are written once (no replace): the loser of a race is checked against the winner's."""
    folder = tmp_path / "records"
    first, second = SessionBindings(folder), SessionBindings(folder)
    a = {"schema": "gitmem.session.binding.v1", "durable": [{"type": "a"}]}
    b = {"schema": "gitmem.session.binding.v1", "durable": [{"type": "b"}]}
    first.resume("s-1", a)
    with pytest.raises(MemoryStoreError):
        second.resume("s-1", b)
    assert second.load("s-1") == a and len(list(folder.iterdir())) == 1
