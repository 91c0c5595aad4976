"""A fork server that runs one workload of every memory kind and adapter, with file access traced.

Usage: ``python planted_workload.py`` reading one JSON command a line on stdin,
answering one JSON line each on stdout (``test_planted_everywhere.py`` drives it):

- ``{"cmd": "run", "root": R, "parts": [...], "steps": [...], "token": T, "out": F, "timeout": S}``
  forks a child that runs the workload's steps of ``parts`` (only those named in
  ``steps``, when given) on the root folder ``R``; the child writes one JSON line per step to ``F``: what the step did
  (``ok``, ``code`` for a store error, or ``crash`` for anything else), the
  writes it was told succeeded (``acks``) and every path under ``R`` it opened
  (``opened``: ``open``, ``os.open`` and ``sqlite3.connect`` audit events). The
  answer says whether the child ended in time, and its peak memory.
- ``{"cmd": "verify", "root": R, "acks": [...], "fsck": M, "out": F, "timeout": S}`` reads
  every acknowledged write back, each by its own kind's reader, in a fresh child,
  after ``git fsck --strict`` of mount folder ``M`` (when given).
- ``{"cmd": "batch", "jobs": [...], "parallel": N}`` runs those commands, up to
  ``N`` children at a time (a child hung on a FIFO costs no CPU, only its time-out),
  and answers with the list of their answers.

Every library is imported once here, before any fork, so a child costs a fork,
not an interpreter start: the planted-file test runs hundreds of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import json
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

# Each kind and adapter the workload covers, imported before the first fork (the optional ones when installed).
from click.testing import CliRunner

from gitmem import MemoryStoreError
from gitmem.adapters.cli import cli
from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.durable import DurableBinding, DurableRepository, Namespace
from gitmem.durable.ledger import AccessEvent
from gitmem.index import background
from gitmem.model import Origin
from gitmem.records import RecordStore
from gitmem.root import Root
from gitmem.session import open_session_memory
from gitmem.tools import FileMemoryCapability, FileMount
from gitmem.tools.durable import DurableTools
from gitmem.tools.records import RecordMemoryCapability, RecordMount
from gitmem.tools.session import SessionTools

try:
    from gitmem.adapters.langgraph_store import GitMemStore
except ImportError:  # the langgraph extra is not installed: its part is skipped
    GitMemStore = None  # type: ignore[assignment,misc]
try:
    from gitmem.adapters.openai_session import GitMemSession
except ImportError:  # the openai-agents extra is not installed
    GitMemSession = None  # type: ignore[assignment,misc]
try:
    import numpy  # noqa: F401  (the semantic extra: the shared vector index)

    from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall

    SEMANTIC = True
except ImportError:
    SEMANTIC = False

NS = Namespace("acme", "alice", "planted")
ORIGIN = Origin(run_id="planted", principal_id="tester")
IDENT = ("fixture", "unit", "r1", 3)


class Skip(Exception):
    """A part whose extra is not installed."""


class Ctx:
    """One run: the root folder, a token that makes this run's writes new, and what was acknowledged."""

    def __init__(self, root: str, token: str) -> None:
        self.root = root
        self.token = token
        self.acks: list[list[Any]] = []
        self.cache: dict[str, Any] = {}

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]


# -- the parts: each a list of steps over one memory (or adapter) ---------------------------------------


def files_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def store() -> Any:
        return c.once("files", lambda: Root(c.root).mount("files", create=True).sync)

    def write() -> None:
        path, text = f"notes/{c.token}.md", f"a memory about planted files {c.token}\n"
        store().write(path, text, expected=None, origin=ORIGIN)
        c.acks.append(["file", "files", path, text])

    def seed() -> None:
        try:
            store().write("notes/a.md", "a memory about cats\n", expected=None, origin=ORIGIN)
        except MemoryStoreError as exc:
            if exc.code not in ("already_exists", "version_mismatch"):
                raise

    return [
        ("files.seed", seed),
        ("files.write", write),
        ("files.read", lambda: store().read("notes/a.md")),
        ("files.list", lambda: store().list()),
        ("files.search", lambda: store().search("memory")),
        ("files.find", lambda: store().find("memory")),
        ("files.rebuild_index", lambda: store().rebuild_index()),
        ("files.index_status", lambda: store().index_status()),
        ("files.log", lambda: store().log("notes/a.md")),
        ("files.changes", lambda: store().changes(None)),
        ("files.blame", lambda: store().blame("notes/a.md")),
        ("files.fsck", lambda: store().fsck()),
    ]


def cli_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def run(*args: str, stdin: str | None = None) -> Callable[[], Any]:
        def call() -> Any:
            done = CliRunner().invoke(cli, ["--root", c.root, "--principal", "tester", *args], input=stdin)
            if done.exception is not None and not isinstance(done.exception, SystemExit):
                raise done.exception
            if done.exit_code not in (0, 1, 2):
                raise RuntimeError(f"exit {done.exit_code}: {done.output[-300:]}")
            if done.exit_code != 0:
                raise MemoryStoreError("unavailable", f"cli exit {done.exit_code}: {done.output[-300:]}")
            return done.output

        return call

    def write() -> None:
        path, text = f"cli/{c.token}.md", f"written by the cli {c.token}\n"
        run("write", "files", path, "--create", stdin=text)()
        c.acks.append(["file", "files", path, text])

    def remote() -> None:
        """A plain bare repository inside the root (no mount: no ``.git`` name) as the memory's ``origin``."""

        def make() -> None:
            hosting = os.path.join(c.root, "hosting")
            if not os.path.isdir(hosting):
                Root(c.root).mount("files", create=True)
                subprocess.run(["git", "init", "-q", "--bare", "-b", "main", hosting], check=True, capture_output=True)
                run("remote", "add", "files", "origin", hosting)()

        c.once("remote", make)

    def push() -> Any:
        remote()
        return run("push", "files")()

    def pull() -> Any:
        remote()
        return run("pull", "files")()

    return [
        ("cli.write", write),
        ("cli.push", push),
        ("cli.pull", pull),
        ("cli.ls", run("ls", "files")),
        ("cli.cat", run("cat", "files", "notes/a.md")),
        ("cli.grep", run("grep", "files", "memory")),
        ("cli.find", run("find", "files", "memory")),
        ("cli.log", run("log", "files")),
        ("cli.status", run("status")),
        ("cli.records", run("records", "search", "recs", "tea")),
        ("cli.durable_health", run("durable", "health", "dur", "-n", *NS.as_dict().values())),
    ]


def records_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def records() -> RecordStore:
        store = c.once("recs", lambda: Root(c.root).mount("recs", create=True, kind="record").sync)
        return c.once("records", lambda: RecordStore(store, "default"))  # type: ignore[no-any-return]

    def add() -> None:
        text = f"prefers green tea {c.token}"
        made = records().add(text, origin=ORIGIN)
        c.acks.append(["record", "recs", made.id, text])

    return [
        ("records.add", add),
        ("records.search", lambda: records().search("tea")),
        ("records.list", lambda: records().list()),
        ("records.fresh_search", lambda: RecordStore(Root(c.root).mount("recs").sync, "default").search("green")),
    ]


def session_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def memory() -> Any:
        return c.once("sess", lambda: open_session_memory(c.root, mount="sess"))

    def remember() -> None:
        text = f"keep the release checklist current {c.token}"
        item = memory().remember(text, tags=["planted"], origin=ORIGIN)
        c.acks.append(["session", "sess", item.id, text])

    return [
        ("session.remember", remember),
        ("session.recall", lambda: memory().recall_similar("release checklist", 3)),
        ("session.recent", lambda: memory().recent(5)),
        ("session.tags", lambda: memory().recall_by_tags(["planted"], 5)),
        ("session.fresh", lambda: open_session_memory(c.root, mount="sess").recall_similar("checklist", 3)),
    ]


def _semantic() -> Any:
    if not SEMANTIC:
        return None
    texts = {"deploys need a canary": [1.0, 0.0, 0.0], "canary": [1.0, 0.0, 0.0]}
    return SemanticRecall(FixtureEmbedder(texts, EmbeddingIdentity(*IDENT)))


def durable_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def repo() -> DurableRepository:
        return c.once(  # type: ignore[no-any-return]
            "dur", lambda: DurableRepository.open(c.root, "dur", create=True, semantic_recall=_semantic())
        )

    def apply() -> None:
        node = f"n-{c.token}"
        change = {
            "namespace": NS.as_dict(),
            "idempotency_key": f"k-{c.token}",
            "operations": [
                {
                    "op": "create",
                    "node": {
                        "id": node,
                        "kind": "semantic",
                        "content": "deploys need a canary",
                        "status": "active",
                        "evidence": [
                            {"uri": "turn://1", "digest": "sha256:aa", "kind": "session_turn"},
                            {"uri": "review://1", "digest": "sha256:bb", "kind": "manual"},
                        ],
                    },
                }
            ],
        }
        repo().apply(change)
        c.acks.append(["durable", "dur", node, "deploys need a canary"])

    def admit() -> None:
        from datetime import UTC, datetime

        nodes = repo().nodes(NS)
        if nodes:
            repo().record_admission(AccessEvent(f"e-{c.token}", NS, nodes[0].id, nodes[0].revision, datetime.now(UTC)))
            repo().usage(NS, nodes[0].id)

    def refresh() -> Any:
        if not SEMANTIC:
            raise Skip("the semantic extra (numpy) is not installed")
        return repo().refresh_semantic_recall(NS)

    def health() -> Any:
        if not SEMANTIC:
            raise Skip("the semantic extra (numpy) is not installed")
        return repo().semantic_health(NS)

    return [
        ("durable.apply", apply),
        ("durable.recall", lambda: repo().recall(NS, "canary")),
        ("durable.admit", admit),
        ("durable.refresh", refresh),
        ("durable.health", health),
        ("durable.fresh_health", lambda: DurableRepository.open(c.root, "dur").semantic_health(NS)),
    ]


def langgraph_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def store() -> Any:
        if GitMemStore is None:
            raise Skip("the langgraph extra is not installed")
        return c.once("lg", lambda: GitMemStore.open(c.root, "lg", origin=ORIGIN))

    def put() -> None:
        value = {"text": f"a langgraph note {c.token}"}
        store().put(("users", "alice"), c.token, value)
        c.acks.append(["langgraph", "lg", ["users", "alice"], c.token, value])

    return [
        ("langgraph.put", put),
        ("langgraph.get", lambda: store().get(("users", "alice"), c.token)),
        ("langgraph.search", lambda: store().search(("users",), query="note")),
        ("langgraph.namespaces", lambda: store().list_namespaces()),
    ]


def agents_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def session() -> Any:
        if GitMemSession is None:
            raise Skip("the openai-agents extra is not installed")
        return c.once("agents", lambda: GitMemSession.open("chat", c.root, "agents"))

    def add() -> None:
        text = f"hello {c.token}"
        asyncio.run(session().add_items([{"role": "user", "content": text}]))
        c.acks.append(["agents", "agents", "chat", text])

    return [
        ("agents.add", add),
        ("agents.get", lambda: asyncio.run(session().get_items())),
        ("agents.fresh_get", lambda: asyncio.run(GitMemSession.open("chat", c.root, "agents").get_items())),
    ]


def mcp_steps(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    def server() -> MemoryMcpServer:
        def make() -> MemoryMcpServer:
            root = Root(c.root)
            files = FileMemoryCapability([FileMount("files", root.mount("files", create=True).sync, "write")])
            recs = RecordMemoryCapability(
                [RecordMount("recs", RecordStore(root.mount("recs", create=True, kind="record").sync, "default"), "write")]
            )
            sess = SessionTools(open_session_memory(c.root, mount="sess"))
            dur = DurableTools(DurableBinding(DurableRepository.open(c.root, "dur", create=True), NS))
            return MemoryMcpServer(files, records=recs, session=sess, durable=dur, origin=ORIGIN)

        return c.once("mcp", make)  # type: ignore[no-any-return]

    def call(name: str, **args: Any) -> dict[str, Any]:
        payload = dict(server().registry.call(name, args, tool_call_id=f"t-{c.token}", origin=ORIGIN))
        if "error" in payload:
            error = payload["error"]
            code = error.get("code", "unavailable") if isinstance(error, dict) else "unavailable"
            raise MemoryStoreError(code if isinstance(code, str) else "unavailable", json.dumps(payload)[:300])  # type: ignore[arg-type]
        return payload

    def create() -> None:
        path, text = f"mcp/{c.token}.md", f"written over mcp {c.token}\n"
        call("memory_file_create", memory="files", path=path, content=text)
        c.acks.append(["file", "files", path, text])

    def add() -> None:
        text = f"mcp prefers oolong {c.token}"
        got = call("memory_record_add", memory="recs", text=text)
        found = json.dumps(got)
        c.acks.append(["record_text", "recs", text, found[:0]])

    def remember() -> None:
        text = f"mcp remembered the canary {c.token}"
        call("memory_session_remember", content=text)
        c.acks.append(["session_text", "sess", text, ""])

    return [
        ("mcp.view", lambda: call("memory_file_view", memory="files", path="notes/a.md")),
        ("mcp.create", create),
        ("mcp.search", lambda: call("memory_file_search", memory="files", query="memory")),
        ("mcp.grep", lambda: call("memory_file_grep", memory="files", pattern="memory")),
        ("mcp.record_add", add),
        ("mcp.record_search", lambda: call("memory_record_search", memory="recs", query="oolong")),
        ("mcp.remember", remember),
        ("mcp.recall", lambda: call("memory_session_recall", query="canary")),
        ("mcp.durable_recall", lambda: call("durable_recall", query="canary")),
    ]


PARTS: dict[str, Callable[[Ctx], list[tuple[str, Callable[[], Any]]]]] = {
    "files": files_steps,
    "cli": cli_steps,
    "records": records_steps,
    "session": session_steps,
    "durable": durable_steps,
    "langgraph": langgraph_steps,
    "agents": agents_steps,
    "mcp": mcp_steps,
}


# -- reading acknowledged writes back ------------------------------------------------------------------


def verify(root: str, ack: list[Any]) -> None:
    kind, mount = ack[0], ack[1]
    if kind == "file":
        got = Root(root).mount(mount).sync.read(ack[2]).text
        assert got == ack[3], f"{ack[2]} reads {got!r}"
    elif kind == "record":
        assert RecordStore(Root(root).mount(mount).sync, "default").get(ack[2]).text == ack[3]
    elif kind == "record_text":
        texts = [r.text for r in RecordStore(Root(root).mount(mount).sync, "default").search(ack[2], limit=20)]
        assert ack[2] in texts, f"record {ack[2]!r} not found"
    elif kind == "session":
        assert open_session_memory(root, mount=mount, create=False).get(ack[2]).content == ack[3]
    elif kind == "session_text":
        items = open_session_memory(root, mount=mount, create=False).items()
        assert any(i.content == ack[2] for i in items), f"session item {ack[2]!r} not found"
    elif kind == "durable":
        node = DurableRepository.open(root, mount).get(NS, ack[2])
        assert node is not None and node.content == ack[3], f"node {ack[2]} is {node!r}"
    elif kind == "langgraph":
        item = GitMemStore.open(root, mount, create=False).get(tuple(ack[2]), ack[3])
        assert item is not None and item.value == ack[4], f"item {ack[3]} is {item!r}"
    elif kind == "agents":
        items = asyncio.run(GitMemSession.open(ack[2], root, mount, create=False).get_items())
        assert any(i.get("content") == ack[3] for i in items), f"session item {ack[3]!r} not found"  # type: ignore[union-attr]
    else:
        raise AssertionError(f"unknown ack {ack}")


# -- the child: tracing, running, reporting --------------------------------------------------------------


def _git_reads(argv: Any, cwd: Any, prefix: str) -> list[str]:
    """Every file of the repository a git child runs on (``--git-dir`` or its folder), under the root.

    A git process is not traced (its opens are not this interpreter's), and it may open
    any file of its repository, blocking and following links: each is taken as opened
    by the step (loose objects and gitmem's own folder aside, which this process reads).
    """
    if not isinstance(argv, (list, tuple)) or not argv or os.path.basename(os.fsdecode(argv[0])) != "git":
        return []
    git_dir = next((a[len("--git-dir=") :] for a in map(str, argv) if a.startswith("--git-dir=")), None)
    folder = os.path.abspath(os.path.join(os.fsdecode(cwd) if cwd else os.getcwd(), git_dir or "."))
    if not (folder + os.sep).startswith(prefix) or not os.path.isdir(os.path.join(folder, "objects")):
        return []
    found = []
    for top, folders, names in os.walk(folder):
        rel = os.path.relpath(top, folder)
        folders[:] = [f for f in folders if rel != "." or f != "gitmem"]
        if rel.startswith("objects" + os.sep) and len(os.path.basename(top)) == 2:
            continue  # loose objects
        found.extend(os.path.join(top, n)[len(prefix) :] for n in names if not n.endswith(".sample"))  # never run
    return found


def child_run(cmd: dict[str, Any]) -> None:
    root = os.path.abspath(cmd["root"])
    prefix = root + os.sep
    opened: list[str] = []
    databases: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "subprocess.Popen" and len(args) >= 3:
            opened.extend(_git_reads(args[1], args[2], prefix))
            return
        if event not in ("open", "sqlite3.connect") or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or path.startswith(":memory:"):
            return
        full = os.path.abspath(path)
        if full.startswith(prefix):
            opened.append(full[len(prefix) :])
            if event == "sqlite3.connect":
                databases.append(full[len(prefix) :])

    sys.addaudithook(hook)
    # A name opened in a folder's descriptor (``dir_fd=``, as gitmem's writers under a mount open) comes to
    # the audit hook as the bare name: the folder the descriptor is of says where it is.
    real_prefix = os.path.realpath(root) + os.sep
    real_open = os.open

    def traced_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is not None and isinstance(path, (str, bytes)) and not os.path.isabs(path):
            try:
                full = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fsdecode(path))
            except OSError:
                full = ""
            if full.startswith(real_prefix):
                opened.append(full[len(real_prefix) :])
        return real_open(path, flags, mode, dir_fd=dir_fd)

    os.open = traced_open  # type: ignore[assignment]
    out = open(cmd["out"], "w", buffering=1)
    stacks = open(cmd["out"] + ".stack", "w")  # where a run that is about to be killed is stuck
    faulthandler.dump_traceback_later(max(0.5, float(cmd.get("timeout", 10)) - 0.7), file=stacks)
    background._spawn = lambda path: None  # type: ignore[assignment]  # the CLI's detached indexer: not here
    if cmd["cmd"] == "verify":
        if cmd.get("fsck"):
            import subprocess

            done = subprocess.run(
                ["git", "--git-dir", os.path.join(root, cmd["fsck"]), "fsck", "--strict", "--no-dangling"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            out.write(json.dumps({"fsck": done.returncode, "output": (done.stdout + done.stderr)[-400:]}) + "\n")
        for ack in cmd["acks"]:
            line: dict[str, Any] = {"ack": ack}
            try:
                verify(root, ack)
                line["ok"] = True
            except BaseException as exc:
                line["lost"] = f"{type(exc).__name__}: {exc}"[:400]
            out.write(json.dumps(line) + "\n")
        return
    ctx = Ctx(root, cmd["token"])
    only = set(cmd["steps"]) if cmd.get("steps") is not None else None
    for part in cmd["parts"]:
        for name, step in PARTS[part](ctx):
            if only is not None and name not in only:
                continue
            out.write(json.dumps({"start": name}) + "\n")
            before = len(ctx.acks)
            del opened[:]
            del databases[:]
            line = {"step": name, "part": part}
            try:
                step()
                line["ok"] = True
            except Skip as exc:
                line["skip"] = str(exc)
            except MemoryStoreError as exc:
                line["code"] = exc.code
                line["message"] = exc.message[:300]
            except BaseException as exc:
                line["crash"] = f"{type(exc).__name__}: {exc}"[:300]
                line["where"] = traceback.format_exc()[-1500:]
            line["acks"] = ctx.acks[before:]
            line["opened"] = sorted(set(opened))
            line["databases"] = sorted(set(databases))
            out.write(json.dumps(line) + "\n")


def fork(cmd: dict[str, Any]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)  # a group of its own: a time-out kills the git it started too
            child_run(cmd)
        except BaseException:
            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    return pid


def serve(cmds: list[dict[str, Any]], parallel: int) -> list[dict[str, Any]]:
    """Run ``cmds`` in forked children, ``parallel`` at a time, each killed at its time-out."""
    answers: list[dict[str, Any] | None] = [None] * len(cmds)
    running: dict[int, tuple[int, float, float]] = {}  # pid -> (job, started, deadline)
    waiting = list(range(len(cmds)))[::-1]
    while waiting or running:
        while waiting and len(running) < parallel:
            n = waiting.pop()
            started = time.monotonic()
            running[fork(cmds[n])] = (n, started, started + float(cmds[n].get("timeout", 10)))
        for pid, (n, started, deadline) in list(running.items()):
            done, status, usage = os.wait4(pid, os.WNOHANG)
            timeout = False
            if not done and time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                _, status, usage = os.wait4(pid, 0)
                timeout = True
            elif not done:
                continue
            del running[pid]
            answers[n] = {
                "timeout": timeout,
                "status": None if timeout else os.waitstatus_to_exitcode(status),
                "elapsed": time.monotonic() - started,
                "maxrss_kb": usage.ru_maxrss,
            }
        time.sleep(0.003)
    return [a for a in answers if a is not None]


def main() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    print(json.dumps({"ready": True, "semantic": SEMANTIC}), flush=True)
    for raw in sys.stdin:
        cmd = json.loads(raw)
        if cmd["cmd"] == "batch":
            print(json.dumps(serve(cmd["jobs"], int(cmd.get("parallel", 1)))), flush=True)
        else:
            print(json.dumps(serve([cmd], 1)[0]), flush=True)


if __name__ == "__main__":
    main()
