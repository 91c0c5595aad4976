"""Loading libgit2 into a CLI process without reading the system's CA bundle.

Importing pygit2 points libgit2 at the default CA file and folder, and libgit2 with
OpenSSL parses the whole file then (~200 kB, a few hundred certificates): about a
fifth of pygit2's import, which a ``gitmem pull`` process pays before any work.
gitmem never lets libgit2 open a connection (every fetch and push is the git
client's, with git's own certificate settings), so a CLI process imports pygit2
with the CA *folder* alone (:func:`import_without_ca_file`), which libgit2 reads
lazily, certificate by certificate, only if a connection ever asks. The
environment variable that tells pygit2 so is set around the import only and then
put back as it was: no git child, and no TLS connection Python makes later, ever
sees the change. A library user's process imports pygit2 as pygit2 does.
"""

from __future__ import annotations

import os
import sys


def import_without_ca_file() -> None:
    """Import pygit2 (if no one has yet) pointing libgit2 at the CA folder only (the system's, or
    ``SSL_CERT_DIR``); nothing changes when there is no CA folder (libgit2 needs a file or a folder)."""
    if "pygit2" in sys.modules:
        return
    import ssl  # pygit2 imports it anyway

    if ssl.get_default_verify_paths().capath is None:
        return
    named = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = os.devnull  # not a regular file: pygit2 then passes no CA file
    try:
        import pygit2  # noqa: F401
    finally:
        if named is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = named
