"""Drive the CLI as a user would: arguments in, exit code and output back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gitmem.adapters.cli import cli

Run = Callable[..., Result]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "mem"


@pytest.fixture
def gm(root: Path) -> Run:
    """``gm("ls", "user", input="...")`` runs ``gitmem --root <tmp> ls user``."""
    runner = CliRunner()

    def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(cli, ["--root", str(root), *args], input=input, env=env, catch_exceptions=False)

    return run


@pytest.fixture
def user(gm: Run) -> Run:
    """A ``user`` memory holding ``prefs/style.md``."""
    assert gm("init", "user").exit_code == 0
    text = "---\ndescription: How to answer\n---\n- likes tea\n- reply in English\n"
    assert gm("write", "user", "prefs/style.md", "--create", input=text).exit_code == 0
    return gm


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)
