"""A CLI pull imports libgit2 without its CA file, and leaves the environment as it found it.

gitmem never lets libgit2 connect anywhere (git's client does every transfer), so a
CLI process skips the CA bundle pygit2 loads at import (gitmem.git.libgit2). What
must not change: the environment every git child and every TLS connection Python
makes afterwards sees, whatever the user set.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys

import pytest

PROBE = """
import json, os
before = dict(os.environ)
from gitmem.git.libgit2 import import_without_ca_file
import_without_ca_file()
import pygit2
print(json.dumps([pygit2.settings.ssl_cert_file, pygit2.settings.ssl_cert_dir, dict(os.environ) == before,
                  os.environ.get("SSL_CERT_FILE")]))
"""


@pytest.mark.parametrize("named", [None, "default"])
def test_libgit2_gets_the_ca_folder_only_and_the_environment_stays(named: str | None) -> None:
    if ssl.get_default_verify_paths().capath is None:
        pytest.skip("this system has no CA folder: pygit2 is imported as it is")
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    cafile = ssl.get_default_verify_paths().openssl_cafile
    if named is not None:
        env["SSL_CERT_FILE"] = cafile
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    cert_file, cert_dir, unchanged, seen = json.loads(done.stdout)
    assert cert_file is None and cert_dir == ssl.get_default_verify_paths().capath
    assert unchanged and seen == (cafile if named is not None else None)


def test_a_library_import_of_pygit2_is_left_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import gitmem.remotes, pygit2; print(pygit2.settings.ssl_cert_file is None)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ssl.get_default_verify_paths().cafile is None)
