"""What refusing hostile input costs, and what it saves: tag cleaning and the import scan.

Two comparisons, each against its baseline in the same run, interleaved round by round:

- **tags**: :func:`gitmem.session.items.clean_tags` against the list-search version it
  replaced (kept here as the baseline: duplicates found with ``in`` on a list, the
  64-tag limit applied after the loop). For an accepted call (a few tags, or 1,024
  entries of 64 distinct tags) the two should cost the same; for a flood of N
  distinct tags the old one is quadratic and the new one refuses at the 65th tag.
- **scan**: :func:`gitmem.exchange.scan_folder` (``lstat`` first, bounded reads,
  special files refused unopened) against the plain walk and ``read_bytes`` it
  replaced, on a folder of small notes.

Usage::

    .venv/bin/python bench/bench_hostile.py            # 2,000 files, 7 rounds
    .venv/bin/python bench/bench_hostile.py --quick    # 300 files, 3 rounds

It prints p50 per case and the ratio new / old.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.errors import MemoryStoreError
from gitmem.exchange import scan_folder
from gitmem.fileformat import DEFAULT_FORMAT, encode_text, validate_path
from gitmem.session.items import MAX_TAG_CHARS, MAX_TAGS, check_no_secret, clean_tags


def old_clean_tags(tags: Iterable[object]) -> tuple[str, ...]:
    """The version before: a list search per tag, the limit checked last."""
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise MemoryStoreError("invalid_text", "bad tag")
        cleaned = tag.strip().lower()
        if len(cleaned) > MAX_TAG_CHARS or any(c in cleaned for c in "\r\n\t\x00"):
            raise MemoryStoreError("invalid_text", "bad tag")
        check_no_secret(cleaned, "a tag")
        if cleaned not in out:
            out.append(cleaned)
    if len(out) > MAX_TAGS:
        raise MemoryStoreError("invalid_text", "too many")
    return tuple(out)


def old_scan(folder: Path) -> int:
    """The walk before: every file read whole, then checked."""
    n = 0
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in files:
            full = Path(top) / name
            try:
                text = full.read_bytes().decode("utf-8")
                validate_path(full.relative_to(folder).as_posix())
                encode_text(text)
                n += 1
            except (MemoryStoreError, UnicodeDecodeError):
                continue
    return n


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    try:
        fn()
    except MemoryStoreError:
        pass
    return time.perf_counter() - start


def compare(label: str, new: Callable[[], object], old: Callable[[], object], rounds: int) -> None:
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(new))
        b.append(timed(old))
    pa, pb = statistics.median(a), statistics.median(b)
    print(f"{label:<44} new {pa * 1e3:9.3f} ms   old {pb * 1e3:9.3f} ms   new/old {pa / pb:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    files, rounds = (300, 3) if args.quick else (2_000, 7)
    few = ["Release", "deploy", "ci", "Release"]
    repeated = [f"t{n % 64}" for n in range(1024)]
    compare("tags: 4 tags (accepted)", lambda: clean_tags(few), lambda: old_clean_tags(few), rounds * 50)
    compare("tags: 1,024 entries, 64 distinct (accepted)", lambda: clean_tags(repeated), lambda: old_clean_tags(repeated), rounds)
    for n in (1_000, 5_000) if args.quick else (1_000, 5_000, 20_000):
        flood = [f"tag{i}" for i in range(n)]
        compare(f"tags: {n:,} distinct (refused)", lambda f=flood: clean_tags(f), lambda f=flood: old_clean_tags(f), rounds)  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        for i in range(files):
            sub = folder / f"d{i % 20}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"n{i}.md").write_text(f"---\ndescription: note {i}\n---\nsome text for note {i}\n" * 3)
        compare(
            f"scan: {files:,} small files",
            lambda: scan_folder(folder, DEFAULT_FORMAT),
            lambda: old_scan(folder),
            rounds,
        )


if __name__ == "__main__":
    main()
