"""The CLI's table of commands, read by the entry point, the quick path and the click group alike.

Which module registers each command and each command's summary (``gitmem --help``
lists them without importing the modules) and which commands serve until stopped.
A leaf module: the entry point
(:mod:`gitmem.adapters.cli`), :mod:`.quick` and :mod:`.app` all import it and it
imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Modules under this package, the commands each registers on ``cli`` and each command's
#: summary: the first sentence of its help, which ``gitmem --help`` lists (help lists
#: commands alphabetically). The quick path prints that list without importing the modules
#: (or click); ``tests/cli/test_cli_quick.py`` holds each summary to its command's help.
COMMANDS: MappingProxyType[str, Mapping[str, str]] = MappingProxyType(
    {
        "files": {
            "init": "Create memory NAME.",
            "mounts": "List the memories under the root.",
            "ls": "List the files of memory NAME, or of one DIRECTORY.",
            "cat": "Print file PATH of memory NAME.",
            "write": "Write stdin to file PATH of memory NAME.",
            "edit": "Replace the one occurrence of --old with --new in PATH.",
            "mv": "Rename file SOURCE to DESTINATION.",
            "rm": "Delete file PATH if it is still at --expect VERSION.",
            "changes": "List the paths changed since a cursor.",
        },
        "history": {
            "log": "List changes newest first, with who made them.",
            "show": "Print file PATH as it was at revision REV.",
            "diff": "Show what changed from revision A to B (default: the head).",
            "blame": "Show which change last touched each line of PATH, and who made it.",
            "restore": "Set PATH back to its content at REV, as one new commit.",
            "revert": "Undo the change COMMIT made, as one new commit.",
        },
        "search": {
            "grep": "Print the lines that contain PATTERN, as path:line:text.",
            "find": "Rank the files that best match the words of QUERY.",
            "index": "Inspect or rebuild a memory's search index.",
        },
        "admin": {
            "purge": "Empty memory NAME and destroy its history.",
            "forget": "Erase PATH and every past version of it from all history.",
            "fsck": "Check the integrity of memory NAME (git fsck --strict).",
            "gc": "Pack the objects of memory NAME (git gc).",
            "demo": "Run two agents sharing memory NAME (default: demo).",
        },
        "serve": {
            "serve": "Serve every memory under the root: git over HTTP (clone, fetch, checked pushes) and MCP at /mcp.",
        },
        "tokens": {"token": "Tokens of `gitmem serve`: add, list, revoke, rotate; the file keeps only their SHA-256."},
        "hooks": {"hooks": "Server-side git hooks that check pushes made without gitmem serve."},
        "forge": {"check": "Check the commits of git repository REPO against the memory rules."},
        "mcp": {
            "mcp": "Serve memories to an MCP client over stdio: the memory_file_* and memory_record_* tools.",
            "tools": "List the agent tools `gitmem mcp` would offer with the same options, and what their definitions cost.",
        },
        "watch": {"watch": "Print every ref change of memories NAME..."},
        "remote": {
            "clone": "Make memory NAME from the main branch of the git repository at URL, with URL as its remote origin.",
            "remote": "Where a memory is pushed to and pulled from (git remotes of its repository).",
            "push": "Push main of memory NAME to REMOTE (default: origin); never forced.",
            "pull": "Bring main of REMOTE (default: origin) into memory NAME: fast-forward, or merge.",
        },
        "review": {"review": "Send agent writes to proposal branches, and approve or reject them."},
        "manage": {
            "import": "Copy the files of DIRECTORY into memory NAME as one commit.",
            "export": "Write every file of memory NAME to DESTINATION, a new folder or a tarball.",
            "delete": "Delete memory NAME: its repository and all its history.",
            "status": "Show the root and each memory: kind, head, size, review and index state.",
            "config": "Show or change the limits of memory NAME.",
        },
        "durable": {"durable": "Durable memory: namespaced nodes that reach a model only once activated."},
        "session": {"session": "Session memory: remember, recall and prune what agent sessions learned."},
        "records": {"records": "Record memory: short texts, recalled by what they say."},
        "frameworks": {"sweep": "Delete the expired items of LangGraph store NAME, in one commit."},
    }
)


#: Commands that serve until stopped: what they log never holds a URL's credentials.
LONG_RUNNING = frozenset({"serve", "mcp", "watch"})
