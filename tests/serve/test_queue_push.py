"""``git push origin HEAD:refs/for/main``: the server merges the push into ``main`` as it is now.

A direct push loses the compare-and-swap whenever an agent wrote since the
pusher's fetch; a push to the queue ref is merged with ``gitmem pull``'s
three-way rules instead, refused only for a real conflict or a broken rule.
"""

from __future__ import annotations

import threading
from pathlib import Path

from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp
from gitmem.adapters.tokens import parse_token_file, token_entry
from gitmem.git.queue import QUEUE_MAIN
from gitmem.review import enable

from .support import Mount, Served, commit_all, fsck_clean, git, has_object, seed, write

PUSH = f"HEAD:{QUEUE_MAIN}"


def _clone(served: Served, mount: Mount, where: Path) -> Path:
    git("clone", "-q", served.url(mount.name), str(where))
    return where


def test_a_push_behind_main_merges_where_a_direct_push_is_refused(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    work = _clone(served, mount, tmp_path / "work")
    mount.store.sync.write("agent.md", "the agent wrote this\n", expected=None)
    agent = mount.store.sync.head()
    write(work, "person.md", "a person wrote this\n")
    pushed = commit_all(work, "a person's note")
    direct = git("push", "origin", "main", cwd=work, check=False)
    assert direct.returncode != 0, direct.stderr  # git sees main moved and will not push
    done = git("push", "origin", PUSH, cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    assert "merged: main is now" in done.stderr
    head = mount.store.sync.head()
    parents = git("rev-list", "--parents", "-n", "1", head, cwd=mount.path).stdout.split()[1:]
    assert parents == [agent, pushed]
    assert mount.store.sync.read("person.md").text == "a person wrote this\n"
    assert mount.store.sync.read("agent.md").text == "the agent wrote this\n"
    assert not (mount.path / "refs" / "for").exists(), "the queue ref must never be created"
    fsck_clean(mount.path)


def test_a_push_that_builds_on_main_fast_forwards(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    work = _clone(served, mount, tmp_path / "work")
    write(work, "ff.md", "on top\n")
    pushed = commit_all(work, "on top of main")
    done = git("push", "origin", PUSH, cwd=work, check=False)
    assert done.returncode == 0 and "fast forward" in done.stderr, done.stderr
    assert mount.store.sync.head() == pushed


def test_a_real_conflict_is_refused_with_the_file_and_nothing_stays(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    work = _clone(served, mount, tmp_path / "work")
    version = mount.store.sync.read("seed.md").version
    mount.store.sync.write("seed.md", "---\ndescription: the seed\n---\nagent's words\n", expected=version)
    head = mount.store.sync.head()
    write(work, "seed.md", "---\ndescription: the seed\n---\nperson's words\n")
    pushed = commit_all(work, "person edits the seed")
    done = git("push", "origin", PUSH, cwd=work, check=False)
    assert done.returncode != 0 and "[remote rejected]" in done.stderr, done.stderr
    assert "conflict: seed.md" in done.stderr
    assert mount.store.sync.head() == head
    assert not has_object(mount.path, pushed)
    fsck_clean(mount.path)


def test_a_broken_rule_is_refused_through_the_queue_too(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    work = _clone(served, mount, tmp_path / "work")
    mount.store.sync.write("agent.md", "x\n", expected=None)
    head = mount.store.sync.head()
    write(work, "keys/id.md", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n")
    pushed = commit_all(work, "a key")
    done = git("push", "origin", PUSH, cwd=work, check=False)
    assert done.returncode != 0 and "secret:private_key" in done.stderr, done.stderr
    assert mount.store.sync.head() == head and not has_object(mount.path, pushed)
    deleting = git("push", "origin", f":{QUEUE_MAIN}", cwd=work, check=False)
    assert deleting.returncode != 0


def test_pushes_of_distinct_files_land_at_once_while_an_agent_writes(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    stop = threading.Event()
    written = []

    def agent() -> None:
        n = 0
        while not stop.is_set() and n < 2000:
            written.append(mount.store.sync.write(f"agent/{n}.md", f"agent note {n}\n", expected=None))
            n += 1
            stop.wait(0.01)

    writer = threading.Thread(target=agent)
    writer.start()
    try:
        work = _clone(served, mount, tmp_path / "work")
        for i in range(5):
            write(work, f"people/{i}.md", f"person's note {i}\n")
            commit_all(work, f"person {i}")
            done = git("push", "origin", PUSH, cwd=work, check=False)
            assert done.returncode == 0, done.stderr  # the first try lands
    finally:
        stop.set()
        writer.join(timeout=60)
    assert len(written) >= 5, "the agent did not write while the pushes landed"
    for i in range(5):
        assert mount.store.sync.read(f"people/{i}.md").text == f"person's note {i}\n"
    fsck_clean(mount.path)


def test_the_queue_honours_access_and_the_review_gate(tmp_path: Path) -> None:
    from gitmem import Root

    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True)
    seed(store)
    alice, carol = "tok-alice-queue-0123456789abcdef", "tok-carol-queue-0123456789abcdef"
    tokens = parse_token_file(
        token_entry(alice, "alice", ["notes"], "write") + token_entry(carol, "carol", ["notes"], "propose")
    )
    server = GitHttpServer(GitHttpApp(root, tokens=tokens), "127.0.0.1", 0).start()
    try:
        base = f"127.0.0.1:{server.port}/notes.git"
        work = tmp_path / "work"
        git("clone", "-q", f"http://alice:{alice}@{base}", str(work))
        env = {"GIT_AUTHOR_NAME": "alice"}
        write(work, "a.md", "alice's\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "alice", cwd=work, env=env)
        store.sync.write("agent.md", "agent\n", expected=None)
        proposer = git("push", f"http://carol:{carol}@{base}", PUSH, cwd=work, check=False)
        assert proposer.returncode != 0 and "access" in proposer.stderr, proposer.stderr
        enable(store)
        gated = git("push", "origin", PUSH, cwd=work, check=False)
        assert gated.returncode != 0 and "review_gate" in gated.stderr, gated.stderr
        enable(store, False)
        git("push", "-q", "origin", PUSH, cwd=work)
        author = git("log", "-1", "--format=%an %s", "main", cwd=root.mount_path("notes")).stdout
        assert author.startswith("alice "), author  # the merge is the token's principal's
    finally:
        server.stop()
