"""`gitmem push` and `gitmem pull` through the quick path print what click prints, byte for byte.

As in test_cli_quick.py, each command line runs through :func:`quick.run` and through the
click group in this process, and both must agree on stdout, stderr and the exit code;
``quick`` says whether the quick path must take the form. The forms here leave the
memories as they found them (a push with nothing new, a pull that is up to date or
refused), so both runs see the same state; a push and a pull that move a ref run as
real processes, with the ref put back before each. A push through the peek and one
through the store (a memory whose remote URL the peek declines, one with an erasure
ledger) land the same refs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve.support import git

from gitmem import Root, remotepush, remotes
from gitmem.adapters.cli import cli, quick


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``user`` pushed to ``hosting.git``; ``norem`` without remotes; ``badlimit`` with a broken limit;
    ``unrelated`` whose origin shares no history; ``refused`` whose origin holds a binary file."""
    base = tmp_path_factory.mktemp("quicksync")
    root = Root(base / "root")
    hosting = base / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    user = root.mount("user", create=True)
    user.sync.write("notes/a.md", "---\ndescription: tea\n---\nlikes tea\n", expected=None)
    remotes.add(user, "origin", str(hosting))
    remotes.add(user, "Up.Stream", str(hosting))
    remotes.push(user)
    root.mount("norem", create=True)
    bad = root.mount("badlimit", create=True)
    remotes.add(bad, "origin", str(hosting))
    git("--git-dir", bad.path, "config", "gitmem.maxFileBytes", "lots")
    alien = base / "alien"
    git("init", "-q", "-b", "main", str(alien))
    (alien / "x.md").write_text("another history\n")
    git("add", "x.md", cwd=alien)
    git("-c", "user.name=p", "-c", "user.email=p@example.com", "commit", "-qm", "x", cwd=alien)
    other = root.mount("unrelated", create=True)
    other.sync.write("own.md", "its own history\n", expected=None)
    remotes.add(other, "origin", str(alien))
    work = base / "work"
    git("clone", "-q", str(hosting), str(work))
    (work / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    git("add", "logo.png", cwd=work)
    git("-c", "user.name=p", "-c", "user.email=p@example.com", "commit", "-qm", "logo", cwd=work)
    forge = base / "forge.git"
    git("clone", "-q", "--bare", str(work), str(forge))
    refused = root.mount("refused", create=True)
    remotes.add(refused, "origin", str(forge))
    (base / "a-file").write_text("not a folder\n")
    return base


FORMS: list[tuple[tuple[str, ...], bool]] = [
    (("push", "user"), True),  # nothing new: "up to date"
    (("--json", "push", "user"), True),
    (("push", "user", "origin", "--json"), True),
    (("push", "user", "Up.Stream"), True),
    (("push", "user", "up.stream"), True),  # remote names are case-sensitive: none such
    (("push", "user", "--root", "{root}"), True),
    (("--root={root}", "push", "--json", "user"), True),
    (("--principal", "bob", "push", "user"), True),
    (("push", "user", "--proposals"), True),  # through the store
    (("push", "nope"), True),
    (("--json", "push", "nope"), True),
    (("push", "Bad_Name"), True),
    (("push", "user", "nowhere"), True),
    (("push", "user", "no way"), True),
    (("push", "norem"), True),
    (("push", "badlimit"), True),
    (("--json", "push", "badlimit"), True),
    (("pull", "user"), True),  # up to date
    (("pull", "user", "--json"), True),
    (("pull", "user", "Up.Stream", "--propose"), True),
    (("pull", "user", "--principal", "bob"), True),
    (("--principal", "a", "pull", "user", "--principal=b"), True),
    (("pull", "nope"), True),
    (("pull", "user", "nowhere"), True),
    (("--json", "pull", "norem"), True),
    (("pull", "unrelated"), True),  # shares no history: refused
    (("pull", "unrelated", "--json"), True),
    (("pull", "refused"), True),  # a binary file: refused by the rules, each listed
    (("--json", "pull", "refused"), True),
    # Left to click: usage errors, --run, options the commands do not have.
    (("push",), False),
    (("pull",), False),
    (("push", "user", "origin", "x"), False),
    (("push", "user", "--run", "r1"), False),
    (("pull", "user", "--run", "r1"), False),
    (("--run", "r1", "pull", "user"), False),
    (("push", "user", "--principal", "bob"), False),
    (("push", "user", "--propose"), False),
    (("pull", "user", "--proposals"), False),
    (("pull", "user", "--propose=1"), False),
    (("pull", "user", "--principal"), False),
    (("pull", "user", "--principal="), False),
    (("push", "--help"), False),
    (("push", "user", "--", "origin"), False),
    (("push", "user", "--root", "{base}/a-file"), False),
]


@pytest.fixture
def where(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("GITMEM_RUN", "GITMEM_PRINCIPAL", "_GITMEM_COMPLETE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITMEM_ROOT", str(home / "root"))
    monkeypatch.chdir(home)
    yield home


def fill(argv: tuple[str, ...], base: Path) -> list[str]:
    return [a.replace("{root}", str(base / "root")).replace("{base}", str(base)) for a in argv]


def by_click(argv: list[str]) -> int:
    try:
        code = cli.main(argv, prog_name="gitmem")
    except SystemExit as exc:
        code = exc.code
    return 0 if code is None else int(code)


@pytest.mark.parametrize(("argv", "is_quick"), FORMS, ids=[" ".join(f[0]) for f in FORMS])
def test_both_paths_print_the_same(
    argv: tuple[str, ...], is_quick: bool, where: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fill(argv, where)
    capsys.readouterr()
    answered = quick.run(list(line))
    quick_out = capsys.readouterr()
    code = by_click(list(line))
    click_out = capsys.readouterr()
    assert (answered is not None) == is_quick
    if answered is not None:
        assert (answered, quick_out.out, quick_out.err) == (code, click_out.out, click_out.err)
    else:
        assert (quick_out.out, quick_out.err) == ("", "")


def test_the_principal_comes_from_the_environment_unless_typed(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = quick.parse(["pull", "user"], {})
    assert parsed is not None and parsed.principal is None
    parsed = quick.parse(["--principal", "a", "pull", "user", "--principal", "b"], {})
    assert parsed is not None and parsed.principal == "b"
    assert quick.parse(["pull", "user"], {"GITMEM_RUN": "r1"}) is None


ENTRY = [sys.executable, "-c", "from gitmem.adapters.cli import main; main()"]
CLICK = [sys.executable, "-c", "from gitmem.adapters.cli.app import main; main()"]


def real(cmd: list[str], home: Path, *args: str) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("GITMEM_RUN", "GITMEM_PRINCIPAL", "COLUMNS")}
    environ.update(GITMEM_ROOT=str(home / "root"), GITMEM_PRINCIPAL="carol")
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, env=environ, cwd=home, timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_a_push_and_a_pull_that_move_main_print_the_same_both_ways(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    a = root.mount("a", create=True)
    a.sync.write("one.md", "one\n", expected=None)
    remotes.add(a, "origin", str(hosting))
    remotes.push(a)
    b_store, _ = remotes.clone(root, str(hosting), "b")
    before = a.sync.head()
    a.sync.write("two.md", "two\n", expected=None)
    after = a.sync.head()
    outcomes = []
    for cmd in (ENTRY, CLICK):
        git("--git-dir", str(hosting), "update-ref", "refs/heads/main", before)
        git("--git-dir", b_store.path, "update-ref", "refs/heads/main", before)
        pushed = real(cmd, tmp_path, "push", "a")
        pulled = real(cmd, tmp_path, "--json", "pull", "b")
        assert git("--git-dir", b_store.path, "rev-parse", "main").stdout.strip() == after
        outcomes.append((pushed, pulled))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0][0] == outcomes[0][1][0] == 0
    shown = outcomes[0][0][1].rstrip("\n").split("\t")
    assert shown[:2] == ["refs/heads/main", "ok"] and before.startswith(shown[2].split("..")[0])
    for repo in (hosting, Path(b_store.path), Path(a.path)):
        git("--git-dir", str(repo), "fsck", "--strict", "--no-progress")


def test_a_push_the_peek_declines_goes_through_the_store(tmp_path: Path) -> None:
    """A remote URL written quoted (git's parser needed) and an erasure ledger: the store pushes, the same refs land."""
    root = Root(tmp_path / "root")
    hosting = tmp_path / "host ing.git"  # a space: git config writes the URL quoted
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    store = root.mount("user", create=True)
    store.sync.write("a.md", "a\n", expected=None)
    remotes.add(store, "origin", str(hosting))
    assert '"' in (Path(store.path) / "config").read_text()
    assert remotepush._plain_push(root, "user", "origin") is None
    pushed = remotepush.push_named(root, "user")
    assert [(p.ref, p.status) for p in pushed] == [("refs/heads/main", "new")]
    assert git("--git-dir", str(hosting), "rev-parse", "main").stdout.strip() == store.sync.head()

    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", "-b", "main", str(plain))
    remotes.add(store, "plain", str(plain))
    assert remotepush._plain_push(root, "user", "plain") is not None
    store.sync.write("b.md", "b\n", expected=None)
    store.sync.forget("b.md")  # now the mount has a ledger: only the store sends it, with its leases
    assert remotepush._plain_push(root, "user", "plain") is None
    remotepush.push_named(root, "user", "plain")
    listed = git("--git-dir", str(plain), "for-each-ref", "--format=%(refname)").stdout.split()
    assert listed == ["refs/gitmem/erasures", "refs/heads/main"]
    git("--git-dir", str(plain), "fsck", "--strict", "--no-progress")
