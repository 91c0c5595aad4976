"""The real git client against ``gitmem serve`` over loopback: clone, push, refusals, auth, races."""

from __future__ import annotations

import random
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest

from gitmem.git.pushcheck import RefUpdate
from gitmem.index import refresher
from gitmem.model import Changes, Origin

from .support import (
    BAD_PUSHES,
    GIT_TIMEOUT,
    BadPush,
    Mount,
    Served,
    check_refused,
    commit_all,
    fsck_clean,
    git,
    has_object,
    seed,
    write,
)


def clone(served: Served, mount: Mount, tmp_path: Path, token: str | None = "default") -> Path:
    work = tmp_path / "work"
    url = served.url(mount.name) if token == "default" else served.url(mount.name, token)
    git("clone", "-q", url, str(work))
    return work


def test_clone_and_a_valid_push_lands_and_is_visible_through_the_store(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    before = seed(mount.store)
    work = clone(served, mount, tmp_path)
    assert (work / "seed.md").read_text().endswith("hello\n")

    write(work, "prefs/language.md", "---\ndescription: Reply language\n---\nReply in Chinese.\n")
    write(work, "seed.md", "hello, edited by a person\n")
    pushed = commit_all(work, "a person edits the memory")
    done = git("push", "origin", "main", cwd=work)
    assert f"{before[:7]}..{pushed[:7]}  main -> main" in done.stderr

    sync = mount.store.sync
    assert sync.head() == pushed
    listing = {e.path: e for e in sync.list()}
    assert listing["prefs/language.md"].description == "Reply language"
    assert sync.read("seed.md").text == "hello, edited by a person\n"
    assert sync.changes(before) == Changes(pushed, ("prefs/language.md", "seed.md"))
    # The store keeps writing on top of the pushed history.
    sync.write("prefs/language.md", "Reply in French.\n", expected=listing["prefs/language.md"].version)
    assert git("pull", "-q", "--ff-only", cwd=work).returncode == 0
    assert (work / "prefs/language.md").read_text() == "Reply in French.\n"
    fsck_clean(mount.path)


@pytest.mark.parametrize("bad", BAD_PUSHES, ids=[b.id for b in BAD_PUSHES])
def test_a_bad_push_is_refused_with_its_reason_and_leaves_the_mount_unchanged(
    served: Served, mount: Mount, tmp_path: Path, bad: BadPush
) -> None:
    head = seed(mount.store)
    work = clone(served, mount, tmp_path)
    refspec = bad.make(work)
    pushed = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    done = git("push", *bad.flags, "origin", refspec, cwd=work, check=False)
    check_refused(bad, done, mount.path, head, pushed)
    assert "remote: gitmem:   refs/heads/main: " in done.stderr  # the full reason names the ref


def test_refusals_relayed_to_the_pusher_show_escape_sequences_as_text(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    # A refused path is quoted back to the pusher: its escape sequence (here: clear the
    # screen, set the title) must reach their terminal as visible text, never act there.
    seed(mount.store)
    work = clone(served, mount, tmp_path)
    write(work, "notes/\x1b[2J\x1b]0;owned\x07.md", "hostile name\n")
    commit_all(work, "a hostile file name")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0
    remote = [line for line in done.stderr.splitlines() if line.startswith("remote:")]
    assert any("\\x1b[2J" in line for line in remote), done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


def test_a_push_without_a_valid_token_is_refused(served: Served, mount: Mount, tmp_path: Path) -> None:
    head = seed(mount.store)
    work = clone(served, mount, tmp_path)
    write(work, "notes.md", "fine content\n")
    commit_all(work, "anonymous change")

    anonymous = git("push", served.url(mount.name, token=None), "main", cwd=work, check=False)
    assert anonymous.returncode != 0 and "could not read Username" in anonymous.stderr, anonymous.stderr
    wrong = git("push", served.url(mount.name, token="not-the-token"), "main", cwd=work, check=False)
    assert wrong.returncode != 0 and "Authentication failed" in wrong.stderr, wrong.stderr
    assert mount.store.sync.head() == head

    url = f"http://127.0.0.1:{served.server.port}/{mount.name}.git/info/refs?service=git-receive-pack"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url, timeout=30)
    assert caught.value.code == 401
    assert caught.value.headers["WWW-Authenticate"].startswith("Basic")
    caught.value.close()

    bearer = git(
        "-c", "http.extraHeader=Authorization: Bearer tok-3f9a1c2e",
        "push", served.url(mount.name, token=None), "main", cwd=work, check=False,
    )  # fmt: skip
    assert bearer.returncode == 0, bearer.stderr
    assert mount.store.sync.read("notes.md").text == "fine content\n"


def test_reads_need_a_token_unless_the_server_is_public(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    refused = git("clone", "-q", served.url(mount.name, token=None), str(tmp_path / "a"), check=False)
    assert refused.returncode != 0 and "could not read Username" in refused.stderr
    served.app.public_read = True
    git("clone", "-q", served.url(mount.name, token=None), str(tmp_path / "b"))
    assert (tmp_path / "b" / "seed.md").is_file()
    # Public reads never make pushes public.
    write(tmp_path / "b", "x.md", "x\n")
    commit_all(tmp_path / "b", "x")
    assert git("push", "origin", "main", cwd=tmp_path / "b", check=False).returncode != 0


def test_the_dumb_protocol_and_unknown_mounts_are_not_served(served: Served, mount: Mount) -> None:
    seed(mount.store)
    base = f"http://127.0.0.1:{served.server.port}"
    cases = (
        (f"/{mount.name}.git/info/refs", 403),  # a dumb-protocol client
        (f"/{mount.name}.git/HEAD", 404),
        (f"/{mount.name}.git/objects/info/packs", 404),
        ("/nosuch.git/info/refs?service=git-upload-pack", 401),  # no token: existence is not revealed
    )
    for path, code in cases:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(base + path, timeout=30)
        assert caught.value.code == code, path
        caught.value.close()
    result = git("ls-remote", served.url("nosuch"), check=False)
    assert result.returncode != 0 and "not found" in result.stderr.lower()


def test_a_push_racing_an_agent_write_is_reported_failed_and_nothing_is_lost(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    work = clone(served, mount, tmp_path)
    write(work, "from-person.md", "written by a person\n")
    pushed = commit_all(work, "person")
    seen: list[Sequence[RefUpdate]] = []

    def agent_writes_meanwhile(name: str, updates: Sequence[RefUpdate]) -> None:
        # Runs after the push was checked and before its ref CAS: the agent wins the race.
        seen.append(updates)
        mount.store.sync.write("from-agent.md", "written by an agent\n", expected=None, origin=Origin(run_id="r1"))

    served.app.before_update = agent_writes_meanwhile
    done = git("push", "origin", "main", cwd=work, check=False)
    served.app.before_update = None

    assert [u.ref for u in seen[0]] == ["refs/heads/main"]
    assert done.returncode != 0, done.stderr
    assert "[remote rejected] main -> main (the ref moved to" in done.stderr, done.stderr
    sync = mount.store.sync
    assert sync.head() != pushed
    assert {e.path for e in sync.list()} == {"seed.md", "from-agent.md"}

    # Told the truth, the person integrates the agent's change and pushes again: both survive.
    git("pull", "-q", "--rebase", "origin", "main", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    assert {e.path for e in sync.list()} == {"seed.md", "from-agent.md", "from-person.md"}
    fsck_clean(mount.path)


def test_other_branches_are_checked_too_and_atomic_pushes_are_all_or_nothing(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    head = seed(mount.store)
    work = clone(served, mount, tmp_path)
    git("checkout", "-q", "-b", "proposal", cwd=work)
    write(work, "ideas.md", "a proposal\n")
    proposal = commit_all(work, "proposal")
    git("checkout", "-q", "main", cwd=work)
    write(work, "token.md", "api_key = 'AKIAIOSFODNN7EXAMPLE'\n")
    commit_all(work, "bad")

    done = git("push", "--atomic", "origin", "main", "proposal", cwd=work, check=False)
    assert done.returncode != 0
    assert "main -> main (token.md in" in done.stderr and "proposal -> proposal (atomic push failed)" in done.stderr
    assert git("ls-remote", "origin", cwd=work).stdout.count("refs/heads/") == 1
    assert not has_object(mount.path, proposal)

    git("push", "-q", "origin", "proposal", cwd=work)
    assert git("rev-parse", "refs/heads/proposal", cwd=mount.path).stdout.strip() == proposal
    assert mount.store.sync.head() == head  # main untouched
    git("push", "-q", "origin", ":proposal", cwd=work)  # other branches can be deleted
    assert git("show-ref", cwd=mount.path).stdout.count("refs/heads/") == 1
    fsck_clean(mount.path)


def test_a_push_bigger_than_git_post_buffer_is_received(served: Served, mount: Mount, tmp_path: Path) -> None:
    # Past http.postBuffer git sends the pack as a chunked request body (the default
    # buffer is 1 MiB; 64 KiB here keeps the test small); dulwich must get all of it.
    seed(mount.store)
    work = clone(served, mount, tmp_path)
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n"
    for i in range(4):
        write(work, f"bulk/{i:02d}.md", "".join(rng.choices(alphabet, k=40_000)))
    pushed = commit_all(work, "bulk")
    traced = git("-c", "http.postBuffer=65536", "push", "origin", "main", cwd=work, env={"GIT_TRACE_CURL": "1"})
    assert "Transfer-Encoding: chunked" in traced.stderr
    assert mount.store.sync.head() == pushed
    assert len(mount.store.sync.list()) == 5
    fsck_clean(mount.path)


def test_a_pack_over_the_servers_limit_is_refused_and_nothing_of_it_stays(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    before = seed(mount.store)
    work = clone(served, mount, tmp_path)
    objects = sorted(p.name for p in (mount.path / "objects").rglob("*") if p.is_file())
    served.app.max_push_bytes = 30_000
    rng = random.Random(11)  # random text barely compresses, so the pack is ~60 KB
    write(work, "big.md", "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789 \n", k=60_000)))
    commit_all(work, "big")
    pushed = git("push", "origin", "main", cwd=work, check=False)
    assert pushed.returncode != 0
    assert "the pack is larger than this server takes (30000 bytes)" in pushed.stderr
    assert "pack too large" in pushed.stderr
    assert mount.store.sync.head() == before
    assert sorted(p.name for p in (mount.path / "objects").rglob("*") if p.is_file()) == objects
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    write(work, "small.md", "fits\n")
    small = commit_all(work, "small")
    git("push", "-q", "origin", "main", cwd=work)
    assert mount.store.sync.head() == small, "a pack under the limit still lands"
    fsck_clean(mount.path)


def test_tags_and_new_branches_of_known_commits_add_no_objects(served: Served, mount: Mount, tmp_path: Path) -> None:
    head = seed(mount.store)
    work = clone(served, mount, tmp_path)
    objects = sorted(p.name for p in (mount.path / "objects").rglob("*") if p.is_file())
    git("tag", "v1", cwd=work)
    git("push", "-q", "origin", "v1", "main:refs/heads/copy", cwd=work)
    assert git("rev-parse", "v1", "copy", cwd=mount.path).stdout.split() == [head, head]
    assert sorted(p.name for p in (mount.path / "objects").rglob("*") if p.is_file()) == objects
    git("tag", "-a", "v2", "-m", "reviewed", cwd=work)
    git("push", "-q", "origin", "v2", cwd=work)
    assert git("rev-parse", "v2^{commit}", cwd=mount.path).stdout.strip() == head
    fsck_clean(mount.path)


def test_a_push_to_main_refreshes_the_index_in_the_background_and_an_index_failure_does_not_fail_it(
    served: Served, mount: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(mount.store)
    work = clone(served, mount, tmp_path)
    calls: list[str] = []
    refreshed = threading.Event()

    # The served root is shared: a refresh queued by an earlier test's push may land here
    # too, so only this mount's refreshes count (and only they end the wait).
    def catch_up(path: str, *, inline: bool = True) -> None:
        calls.append(path)
        if path == str(mount.path):
            refreshed.set()

    monkeypatch.setattr(refresher, "catch_up", catch_up)
    write(work, "a.md", "a\n")
    commit_all(work, "a")
    git("push", "-q", "origin", "main", cwd=work)
    assert refreshed.wait(GIT_TIMEOUT), "no index refresh after the push"
    assert [c for c in calls if c == str(mount.path)] == [str(mount.path)]

    def broken(path: str, *, inline: bool = True) -> None:
        if path == str(mount.path):
            refreshed.set()
        raise RuntimeError("index is corrupt")

    refreshed.clear()
    monkeypatch.setattr(refresher, "catch_up", broken)
    write(work, "b.md", "b\n")
    pushed = commit_all(work, "b")
    git("push", "-q", "origin", "main", cwd=work)
    assert mount.store.sync.head() == pushed
    assert refreshed.wait(GIT_TIMEOUT)


def test_a_push_racing_a_purge_is_refused_and_brings_no_purged_history_back(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    seed_blob = mount.store.sync.read("seed.md").version
    work = clone(served, mount, tmp_path)
    git("checkout", "-q", "-b", "feature", cwd=work)
    write(work, "seed.md", "hello, edited on a branch\n")
    pushed = commit_all(work, "branch edit")
    served.app.before_update = lambda name, updates: mount.store.sync.purge()
    done = git("push", "origin", "feature", cwd=work, check=False)
    served.app.before_update = None

    assert done.returncode != 0 and "history was rewritten" in done.stderr, done.stderr
    assert "refs/heads/feature" not in git("show-ref", cwd=mount.path, check=False).stdout
    assert not has_object(mount.path, pushed) and not has_object(mount.path, seed_blob)
    fsck_clean(mount.path)
