"""Git's configuration for test and benchmark runs: fresh empty files, never ``/dev/null``.

Pointing ``GIT_CONFIG_GLOBAL`` (or ``HOME``) at ``/dev/null`` looks harmless, but a git
command that *writes* the global config under it (``git config --global``) takes
``/dev/null.lock`` and renames it over ``/dev/null``: the device becomes a regular file
and every later git call on the machine fails on its contents. Runs here instead get
one temporary folder per process holding an empty config file, used as the global and
system config and as ``HOME``; it is removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
from functools import cache


@cache
def _home() -> str:
    home = tempfile.mkdtemp(prefix="gitmem-gitconfig-")
    atexit.register(shutil.rmtree, home, True)
    os.makedirs(os.path.join(home, "xdg"))
    with open(os.path.join(home, "gitconfig"), "x"):
        pass
    return home


def isolated_git_env() -> dict[str, str]:
    """The variables that keep the user's and the machine's git configuration out of a run."""
    home = _home()
    config = os.path.join(home, "gitconfig")
    return {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": config,
        "GIT_CONFIG_GLOBAL": config,
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, "xdg"),
    }


def dev_null_is_device() -> bool:
    """Whether ``/dev/null`` is still the character device (a git config write can replace it)."""
    try:
        return stat.S_ISCHR(os.stat(os.devnull).st_mode)
    except OSError:
        return False
