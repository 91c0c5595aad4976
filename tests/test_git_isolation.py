"""The suite's git runs with a throwaway global config, so no git call can replace /dev/null."""

from __future__ import annotations

import os
import stat
import subprocess

from bench.gitenv import dev_null_is_device


def test_global_config_write_lands_in_a_temporary_file_not_dev_null() -> None:
    config = os.environ["GIT_CONFIG_GLOBAL"]
    assert config != os.devnull and os.environ["HOME"] != os.devnull
    assert os.path.dirname(config) == os.environ["HOME"]
    subprocess.run(["git", "config", "--global", "gitmemtest.isolation", "yes"], check=True)
    try:
        with open(config, encoding="utf-8") as fh:
            assert "isolation = yes" in fh.read()
        assert stat.S_ISREG(os.stat(config).st_mode)
        assert dev_null_is_device()
    finally:
        subprocess.run(["git", "config", "--global", "--unset", "gitmemtest.isolation"], check=True)
