"""A real ``gitmem serve`` process, real client processes, and a real SIGKILL.

- two MCP client processes race on one file through ``/mcp``: one edit wins, the
  other is told the file as it is now;
- the server is SIGKILLed while git clients push to ``refs/for/main`` and an MCP
  client writes: after a restart every acknowledged change is in ``main``, ``git
  fsck --strict`` is clean, no ref lock is left, and both paths work again.

Loopback only; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.tokens import token_entry

from .support import GIT_TIMEOUT, fsck_clean, git, seed, start_serve, stop_serve

REPO = Path(__file__).resolve().parents[2]
ALICE = "tok-alice-processes-0123456789abcdef"
BOB = "tok-bob-processes-0123456789abcdef"

RACER = """
import json, sys, time
sys.path.insert(0, {repo!r})
from bench.mcp_http_client import HttpMcpClient
url, token, name, go = sys.argv[1:5]
with HttpMcpClient(url, token) as client:
    print("ready", flush=True)
    while not __import__("os").path.exists(go):
        time.sleep(0.005)
    result = client.call("memory_file_edit", memory="notes", path="shared.md", old_string="nobody", new_string=name)
    print(json.dumps({{"error": result.is_error, "text": result.content[0].text}}))
"""


class Server:
    def __init__(self, root: Root, tokens: Path) -> None:
        self.root = root
        self.tokens = tokens
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> Server:
        self.proc, info = start_serve(self.root.path, self.tokens)
        self.url = info["url"]
        return self

    def git_url(self, who: str, token: str) -> str:
        return f"{self.url.replace('://', f'://{who}:{token}@', 1)}/notes.git"

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.communicate(timeout=GIT_TIMEOUT)

    def stop(self) -> None:
        if self.proc is not None:
            stop_serve(self.proc)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["notes"], "write") + token_entry(BOB, "bob", ["notes"], "write"))
    served = Server(root, tokens).start()
    try:
        yield served
    finally:
        served.stop()


def test_two_mcp_client_processes_race_on_one_file(server: Server, tmp_path: Path) -> None:
    store = server.root.mount("notes").sync
    store.write("shared.md", "owner: nobody\n", expected=None)
    go = tmp_path / "go"
    script = RACER.format(repo=str(REPO))
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", script, f"{server.url}/mcp", token, name, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for token, name in ((ALICE, "alice"), (BOB, "bob"))
    ]
    for racer in racers:  # both have their sessions open and wait for the file
        assert racer.stdout is not None
        assert racer.stdout.readline() == "ready\n", racer.communicate(timeout=GIT_TIMEOUT)[1]
    go.write_text("go")
    answers = []
    for racer in racers:
        out, err = racer.communicate(timeout=GIT_TIMEOUT)
        assert racer.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(a["error"] for a in answers) == [False, True], answers
    now = store.read("shared.md").text
    loser = json.loads(next(a["text"] for a in answers if a["error"]))
    assert now in ("owner: alice\n", "owner: bob\n") and loser["current"]["content"] == now
    winner = "alice" if now == "owner: alice\n" else "bob"
    assert store.log("shared.md")[0].origin.principal_id == winner


def test_a_killed_server_loses_nothing_acknowledged_and_serves_again(server: Server, tmp_path: Path) -> None:
    landed: list[str] = []
    stop = threading.Event()

    def person(n: int) -> None:
        work = tmp_path / f"work{n}"
        if git("clone", "-q", server.git_url("alice", ALICE), str(work), check=False).returncode:
            return
        env = {"GIT_AUTHOR_NAME": "alice"}
        for i in range(200):
            if stop.is_set():
                return
            path = f"people/{n}-{i}.md"
            (work / "people").mkdir(exist_ok=True)
            (work / path).write_text(f"note {n} {i}\n")
            git("add", "-A", cwd=work)
            git("commit", "-q", "-m", path, cwd=work, env=env)
            if git("push", "origin", "HEAD:refs/for/main", cwd=work, check=False).returncode == 0:
                landed.append(path)
            else:
                return  # the server is gone

    threads = [threading.Thread(target=person, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(landed) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()  # mid-push, most likely: the pushes run back to back
    stop.set()
    for thread in threads:
        thread.join(timeout=GIT_TIMEOUT)
    assert landed, "no push landed before the kill: this test would test nothing"
    mount = server.root.mount_path("notes")
    store = server.root.mount("notes").sync
    for path in landed:
        assert store.read(path).text.startswith("note "), path
    fsck_clean(mount)
    # A kill between a ref's lock file and its rename leaves `main.lock` (git's protocol has no
    # other way); the next writer finds the dead holder's record and removes it. Started again,
    # the server takes pushes and MCP writes as before, and no lock is left after them.
    server.start()
    work = tmp_path / "after"
    git("clone", "-q", server.git_url("alice", ALICE), str(work))
    (work / "after.md").write_text("after the kill\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "after", cwd=work, env={"GIT_AUTHOR_NAME": "alice"})
    git("push", "-q", "origin", "HEAD:refs/for/main", cwd=work)
    sys.path.insert(0, str(REPO))
    from bench.mcp_http_client import HttpMcpClient

    with HttpMcpClient(f"{server.url}/mcp", BOB) as bob:
        assert not bob.call("memory_file_create", memory="notes", path="bob.md", content="bob\n").is_error
    assert store.read("after.md").text == "after the kill\n" and store.read("bob.md").text == "bob\n"
    fsck_clean(mount)
    locks = [*(mount / "refs").rglob("*.lock"), *mount.glob("*.lock")]
    assert not locks, f"ref locks left behind: {locks}"


def test_a_second_stop_writes_to_no_descriptor_the_first_one_freed(tmp_path: Path) -> None:
    """After the loop closed its wake-up pipe, a stop must not write to that descriptor number:
    the process may have given it to another file meanwhile (a test teardown once hit EBADF)."""
    from gitmem import Root
    from gitmem.adapters.http_front import GitHttpServer
    from gitmem.adapters.http_server import GitHttpApp

    server = GitHttpServer(GitHttpApp(Root(tmp_path / "root"))).start()
    server.stop()
    readers, writers = [], []
    for _ in range(8):  # likely to be handed the numbers the loop's pipe and sockets had
        r, w = os.pipe()
        readers.append(r)
        writers.append(w)
    try:
        server.stop()
        server.request_stop()
        for r in readers:
            os.set_blocking(r, False)
            with pytest.raises(BlockingIOError):
                os.read(r, 1)
    finally:
        for fd in readers + writers:
            os.close(fd)
