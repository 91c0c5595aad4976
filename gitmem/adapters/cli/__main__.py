"""``python -m gitmem.adapters.cli``: the ``gitmem`` command without the installed entry point.

MCP client configurations and tests launch the server this way with the exact
interpreter they run (``sys.executable -m gitmem.adapters.cli mcp ...``).
"""

from gitmem.adapters.cli import main

if __name__ == "__main__":
    main()
