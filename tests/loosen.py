"""Turn a mount's packs into loose objects: the corruption tests damage single object files.

gitmem writes every commit as one small pack, so a test that needs a loose
object to damage makes its commits first and then unpacks them with git's own
``unpack-objects`` (which skips objects the repository already has, hence the
packs are moved out first). Open a new store afterwards: a handle that read a
pack keeps it mapped.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path


def loosen(repo: str | os.PathLike[str]) -> None:
    folder = Path(repo, "objects", "pack")
    with tempfile.TemporaryDirectory() as away:
        moved = []
        for pack in sorted(folder.glob("pack-*.pack")):
            target = Path(away, pack.name)
            os.replace(pack, target)
            moved.append(target)
            for ext in (".idx", ".rev", ".bitmap"):
                pack.with_suffix(ext).unlink(missing_ok=True)
        for pack in moved:
            with open(pack, "rb") as data:
                subprocess.run(["git", "--git-dir", os.fspath(repo), "unpack-objects", "-q"], stdin=data, check=True)
