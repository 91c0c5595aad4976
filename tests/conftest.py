from __future__ import annotations

import os

import pytest

# Tests drive the real git CLI; give it an identity and keep user config out.
os.environ.setdefault("GIT_AUTHOR_NAME", "tester")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tester@example.com")
os.environ.setdefault("GIT_COMMITTER_NAME", "tester")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tester@example.com")
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
os.environ.setdefault("GIT_CONFIG_GLOBAL", os.devnull)


@pytest.fixture
def root_dir(tmp_path: os.PathLike[str]) -> str:
    return os.fspath(tmp_path)
