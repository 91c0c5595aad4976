"""`gitmem session ...`: remember, recall, recent, tags, prune, delete, with --json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner, Result

from gitmem.adapters.cli import cli


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["session", *args], env=env, catch_exceptions=False)


def data(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    loaded: dict[str, object] = json.loads(result.output)
    return loaded


def test_the_session_commands_on_the_workspace_default(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path)]
    first = data(
        run("remember", "Release checks passed after provider verification", "--tag", "release", *ws, "--json")
    )
    item = first["item"]
    assert isinstance(item, dict)
    again = data(
        run("remember", "release checks  passed after provider verification", "--importance", "0.9", *ws, "--json")
    )
    assert again["item"]["id"] == item["id"]  # type: ignore[index]
    assert again["item"]["importance"] == 0.9  # type: ignore[index]
    run("remember", "the coffee machine is on the third floor", "--tag", "office", *ws)
    recalled = data(run("recall", "provider verification", "-k", "3", *ws, "--json"))
    assert [r["id"] for r in recalled["results"]] == [item["id"]]  # type: ignore[union-attr,index]
    recent = data(run("recent", "-n", "1", *ws, "--json"))
    assert [i["content"] for i in recent["items"]] == ["the coffee machine is on the third floor"]  # type: ignore[union-attr,index]
    assert data(run("tags", *ws, "--json"))["tags"] == {"office": 1, "release": 1}
    tagged = data(run("tags", "release", *ws, "--json"))
    assert [i["id"] for i in tagged["items"]] == [item["id"]]  # type: ignore[union-attr,index]
    text = run("recall", "provider verification", *ws)
    assert "release checks passed after provider" in text.output and "score 1.00" in text.output
    repo = tmp_path / ".gitmem" / "memory" / "session.git"
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True, check=True)
    assert len(log.stdout.splitlines()) == 4  # init + create + merge edit + create


def test_prune_and_delete(tmp_path: Path) -> None:
    where = ["--memory-dir", str(tmp_path / "m")]
    ids = [
        data(run("remember", f"note number {n} worth little", "--importance", "0.1", *where, "--json"))["item"]["id"]
        for n in range(3)
    ]  # type: ignore[index]
    pinned = data(run("remember", "a pinned note to keep forever", "--tag", "pinned", *where, "--json"))["item"]["id"]  # type: ignore[index]
    dry = data(run("prune", "--max-items", "2", "--dry-run", *where, "--json"))
    assert set(dry["removed"]) == set(ids[:2])  # type: ignore[arg-type]  # the two oldest are least relevant
    done = data(run("prune", "--max-items", "0", *where, "--json"))
    assert set(done["removed"]) == set(ids)  # type: ignore[arg-type]
    assert done["kept_protected"] == 1
    assert data(run("delete", pinned, *where, "--json")) == {"deleted": pinned}
    missing = run("delete", pinned, *where)
    assert missing.exit_code == 1 and "not_found" in missing.output


def test_bad_input_and_memory_dir_from_the_environment(tmp_path: Path) -> None:
    env = {"GITMEM_MEMORY_DIR": str(tmp_path / "env")}
    refused = run("remember", "password = hunter2hunter2 for the db", env=env)
    assert refused.exit_code == 1 and "password_assignment" in refused.output
    assert run("remember", "stored where the environment says", env=env).exit_code == 0
    assert (tmp_path / "env" / "session.git").is_dir()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    failed = run("recent", "--memory-dir", str(blocked / "m"))
    assert failed.exit_code == 1 and str(blocked / "m") in failed.output


def test_an_explicit_root_holds_the_session_mount(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--root", str(tmp_path / "r"), "session", "remember", "kept in the root's session mount"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "session.git").is_dir()


def test_recent_and_recall_print_each_item_as_two_real_lines(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path)]
    run("remember", "the coffee machine is on the third floor", "--tag", "office", *ws)
    for command in (["recent"], ["recall", "coffee machine"]):
        out = run(*command, *ws).output
        assert "\\n" not in out, out
        head, body = out.splitlines()
        assert head.startswith("mem-") and "[office]" in head
        assert body == "    the coffee machine is on the third floor"
