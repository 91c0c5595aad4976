"""A helper process a benchmark drives one line at a time over a pipe (one build of gitmem in each)."""

from __future__ import annotations

import subprocess


class PipeChild:
    """``args`` started with pipes; it prints ``ready`` once set up, then one number per line it is sent."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def ask(self, *words: str) -> float:
        """Send ``words`` as one line; the number the child answers (its CPU time for the work, say)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(" ".join(words) + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
