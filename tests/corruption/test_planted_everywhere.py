"""Every file gitmem opens under a mount, found by tracing a workload, planted in every hostile form.

No list of files here: a workload of every memory kind and adapter (file memory
through the store and the CLI, the search index, record, session and durable
memory with its semantic index, the LangGraph store and the Agents SDK session
when installed, the MCP tools in-process; ``planted_workload.py``) runs once with
the ``open``, ``os.open`` and ``sqlite3.connect`` audit events traced, and every
path it opened under the root folder is collected. A file added tomorrow is in
the trace as soon as the workload reaches it.

Paths are grouped by pattern (the mount's name, hashes and random parts left
out: every pack index is one group, every search-index segment another), and
for one path of each group, in turn, the file is replaced by a FIFO, a link to
a file outside the root, a 100 MB sparse file, JSON nested 30,000 deep (where
the file held JSON or did not exist), garbage bytes and an empty file; and each
folder below a mount that holds such a file is moved out of the root and a link
left in its place ("folder_link": gitmem must neither write through it nor change
what it points at). Then the
parts of the workload that opened it run again in a child process (forked from
a server that imported everything once) with a time-out of a few seconds. Each
step must succeed or fail with a store error carrying a code (or skip); the
child must end in time without reading the big file into memory; nothing may
be written outside the root (the link's target and the folder around it are
unchanged); and every write the workload was told succeeded must read back
afterwards, by its own kind's reader, once the plant is gone, from a mount that
``git fsck --strict`` still finds clean.

A plant whose outcome is documented behaviour rather than a clear error within
the time limit is listed in ``KNOWN`` with the reason; those are checked by a
separate, non-strict ``xfail`` test, so the list shows what is left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # real processes: a fork server and a few hundred children

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PARTS = ["files", "records", "session", "durable", "langgraph", "agents", "mcp", "cli"]
PLANTS = ["fifo", "link_out", "sparse_100mb", "deep_json", "garbage", "empty"]
FOLDER_LINK = "folder_link"  # planted in place of each folder below a mount that holds a planted file
TIMEOUT = 20.0  # seconds a planted run may take: a clean one takes well under one, a hang forever; the
# margin is for a loaded CI machine (four children at once, 100 MB plants read under load took over 6 s)
PARALLEL = 4  # planted runs at a time: one hung on a FIFO waits without using a core
SENTINEL = b"SENTINEL: a file outside the root that gitmem must never write\n"
GARBAGE = bytes((i * 151 + 7) % 256 for i in range(4096))
RSS_SLACK_KB = 250 * 1024  # a bounded read of the whole 100 MB file (a cache's limit may be larger) stays below

# (pattern of the planted path relative to the root, plant or "*") -> why it still fails.
KNOWN: dict[tuple[str, str], str] = {
    ("<mount>.git/refs/heads/main.lock", "empty"): "an empty ref lock is what a live git holds between making it "
    "and writing the ref's next value: gitmem waits for it and breaks it only once it stayed unchanged for "
    "stale_lock_seconds (30 s), as documented; every other planted lock is refused at once",
}


def norm(rel: str) -> str:
    """A path's pattern: the mount's name, object names, hashes, random and numbered parts left out."""
    _, _, rest = rel.partition("/")
    if "/" not in rel:
        return rel  # a file of the root folder itself
    rest = re.sub(r"^objects/[0-9a-f]{2}/[0-9a-f]{38}$", "objects/??/*", rest)
    rest = re.sub(r"^gitmem/index/MAIN_[a-z0-9]+\..*$", "gitmem/index/MAIN_*.segment-file", rest)
    rest = re.sub(r"[0-9a-f]{8,}", "*", rest)
    rest = re.sub(r"(?<![A-Za-z0-9])(?=[a-z0-9]*[0-9])[a-z0-9]{8,}", "*", rest)
    rest = re.sub(r"[0-9]+", "#", rest)
    return "<mount>.git/" + rest


@dataclass
class Server:
    """The fork server (``planted_workload.py``): one interpreter with every library imported."""

    proc: subprocess.Popen[str]
    semantic: bool

    def call(self, cmd: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the fork server died"
        return json.loads(line)

    def batch(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = self.call({"cmd": "batch", "jobs": jobs, "parallel": PARALLEL})
        return answers


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "planted_workload.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    hello = json.loads(proc.stdout.readline())
    try:
        yield Server(proc, bool(hello["semantic"]))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


@dataclass
class Job:
    """One plant: where, what, and what its run and the checks after it found (``problems``)."""

    rel: str
    pattern: str
    plant: str
    folder: Path
    steps: list[str]
    tops: set[str]  # the root's entries those steps use: only they are copied
    planted: tuple[int, int] = (0, 0)
    before: dict[str, bytes] = field(default_factory=dict)  # a folder_link's target as it was moved out
    problems: list[str] = field(default_factory=list)
    reached: bool = False
    acks: list[Any] = field(default_factory=list)


@dataclass
class Matrix:
    template: Path
    opened: dict[str, set[str]]  # path relative to the root -> the steps that opened it
    databases: set[str]  # the paths SQLite was asked to open
    chosen: dict[str, str]  # pattern -> the path planted for it
    jobs: list[Job]
    baseline_kb: int


def _clean_run(server: Server, root: Path, work: Path, token: str, *, strict: bool = True) -> tuple[list[dict[str, Any]], int]:
    out = work / f"{token}.jsonl"
    (answer,) = server.batch([{"cmd": "run", "root": str(root), "parts": PARTS, "token": token, "out": str(out), "timeout": 120}])
    lines = _lines(out)
    assert not answer["timeout"] and answer["status"] == 0, answer
    steps = [line for line in lines if "step" in line]
    assert len(steps) > 40, lines[-3:]
    bad = [s for s in steps if "crash" in s or (strict and "code" in s and s["step"] != "files.seed")]
    assert not bad, bad
    return steps, int(answer["maxrss_kb"])


def choose(opened: dict[str, set[str]], template: Path, stable: set[str]) -> dict[str, str]:
    """One path per pattern: one that exists (else one opened by both runs), opened by the most steps."""
    groups: dict[str, list[str]] = {}
    for rel in sorted(opened):
        groups.setdefault(norm(rel), []).append(rel)
    chosen: dict[str, str] = {}
    for pattern, members in groups.items():
        present = [m for m in members if os.path.lexists(template / m)] or [m for m in members if m in stable]
        if not present:
            continue  # a temporary file under a random name: the next run picks another name
        pool = [m for m in present if not os.path.isdir(template / m)]
        if pool:
            chosen[pattern] = max(pool, key=lambda m: (len(opened[m]), m.startswith("files.git/"), m))
    return chosen


def _plant(path: Path, plant: str, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if plant == "fifo":
        os.mkfifo(path)
    elif plant in ("link_out", "link_out_empty"):
        path.symlink_to(target)
    elif plant == "sparse_100mb":
        with path.open("wb") as out:
            out.truncate(100 << 20)
    elif plant == "deep_json":
        path.write_text("[" * 30_000 + "]" * 30_000)
    elif plant == "garbage":
        path.write_bytes(GARBAGE)
    else:
        path.write_bytes(b"")


def _looks_json(path: Path) -> bool:
    if not os.path.lexists(path):
        return True
    if not path.is_file() or path.is_symlink():
        return False
    with path.open("rb") as fh:
        head = fh.read(64).lstrip()
    return head[:1] in (b"{", b"[")


def _listing(folder: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            full = Path(dirpath) / name
            out[str(full.relative_to(folder))] = full.read_bytes() if full.is_file() and not full.is_symlink() else b"?"
    return out


def _stuck(job: Job) -> str:
    """The innermost frames of the hung child's main thread (its faulthandler dump), gitmem's first."""
    stack = job.folder / "run.jsonl.stack"
    text = stack.read_text(errors="replace") if stack.exists() else ""
    main = text.split("\n\n")[-1] if "most recent call first" in text else text
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', main)
    ours = [f"{Path(f).name}:{n} {fn}" for f, n, fn in frames if "/gitmem/" in f and "site-packages" not in f]
    return f" at {' < '.join(ours[:3])}" if ours else ""


def _target(job: Job) -> bytes:
    return b"" if job.plant == "link_out_empty" else SENTINEL


def prepare(m: Matrix, job: Job) -> dict[str, Any]:
    """Copy the template, plant, and say what to run."""
    root = job.folder / "root"
    root.mkdir()
    for top in sorted(job.tops):
        if (m.template / top).is_dir():
            shutil.copytree(m.template / top, root / top, symlinks=True)
        elif os.path.lexists(m.template / top):
            shutil.copy2(m.template / top, root / top, follow_symlinks=False)
    outside = job.folder / "outside"
    outside.mkdir()
    (outside / "target").write_bytes(_target(job))
    path = root / job.rel
    if job.plant == FOLDER_LINK:  # the folder itself, moved out of the root, a link left in its place
        shutil.move(path, outside / "folder")
        path.symlink_to(outside / "folder")
        job.before = _listing(outside)
    else:
        _plant(path, job.plant, outside / "target")
    info = os.lstat(path)
    job.planted = (info.st_ino, info.st_mode)
    out = job.folder / "run.jsonl"
    return {"cmd": "run", "root": str(root), "parts": PARTS, "steps": job.steps, "token": job.folder.name,
            "out": str(out), "timeout": TIMEOUT}  # fmt: skip


def judge(m: Matrix, job: Job, answer: dict[str, Any]) -> dict[str, Any]:
    """The checks after a planted run; the plant taken away; what to read back (a verify command) if anything."""
    lines = _lines(job.folder / "run.jsonl")
    steps = [line for line in lines if "step" in line]
    job.reached = any(o == job.rel or o.startswith(job.rel + "/") for s in steps for o in s["opened"])
    if answer["timeout"]:
        started = [line["start"] for line in lines if "start" in line]
        job.problems.append(f"hung (no end within {TIMEOUT:.0f} s) in step {started[-1] if started else '?'}{_stuck(job)}")
    elif answer["status"] != 0:
        job.problems.append(f"the child died with status {answer['status']}")
    for s in steps:
        if "crash" in s:
            job.problems.append(f"{s['step']}: raised {s['crash']}")
    if job.plant == "sparse_100mb" and answer["maxrss_kb"] > m.baseline_kb + RSS_SLACK_KB:
        job.problems.append(f"peak memory {answer['maxrss_kb'] // 1024} MB: the 100 MB file was read more than once")
    if sorted(os.listdir(job.folder)) != ["outside", "root", "run.jsonl", "run.jsonl.stack"]:
        job.problems.append(f"files appeared beside the root: {sorted(os.listdir(job.folder))}")
    if _listing(job.folder / "outside") != (job.before or {"target": _target(job)}):
        job.problems.append(f"written outside the root: the link's target or its folder changed: {sorted(_listing(job.folder / 'outside'))}")
    path = job.folder / "root" / job.rel
    try:
        now = os.lstat(path)
        still = (now.st_ino, now.st_mode) == job.planted
    except FileNotFoundError:
        still = False
    if still:  # not replaced by gitmem: put the original back before reading the acknowledged writes
        os.unlink(path)
        if job.plant == FOLDER_LINK:
            shutil.move(job.folder / "outside" / "folder", path)
        elif os.path.lexists(m.template / job.rel):
            shutil.copy2(m.template / job.rel, path, follow_symlinks=False)
    job.acks = [ack for s in steps for ack in s["acks"]]
    mount = job.rel.split("/")[0] if job.rel.split("/")[0].endswith(".git") else None
    return {"cmd": "verify", "root": str(job.folder / "root"), "acks": job.acks, "fsck": mount,
            "out": str(job.folder / "verify.jsonl"), "timeout": 6 * TIMEOUT}  # fmt: skip


def read_back(job: Job, answer: dict[str, Any]) -> None:
    if answer["timeout"]:
        job.problems.append("reading the acknowledged writes back hung")
    for line in _lines(job.folder / "verify.jsonl"):
        if line.get("fsck"):
            job.problems.append(f"git fsck --strict of the mount failed afterwards: {line['output'][-200:]}")
        if "lost" in line:
            job.problems.append(f"acknowledged write lost: {line['ack'][:3]}: {line['lost'][:200]}")


@pytest.fixture(scope="module")
def matrix(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    work = tmp_path_factory.mktemp("planted")
    template = work / "template"
    template.mkdir()
    first, _ = _clean_run(server, template, work, "setup", strict=False)  # creates every mount and its files
    steps, baseline = _clean_run(server, template, work, "traced")  # a second run on them, traced
    stable = {rel for s in first for rel in s["opened"]}  # a name opened in both runs is not a random temporary one
    opened: dict[str, set[str]] = {}
    databases: set[str] = set()
    writers = {s["step"] for s in steps if s["acks"]}  # the steps that acknowledge a write
    part_of = {s["step"]: s["part"] for s in steps}
    tops: dict[str, set[str]] = {}  # step -> the root's entries (mounts, root files) it opened
    for step in steps:
        for rel in step["opened"]:
            opened.setdefault(rel, set()).add(step["step"])
            tops.setdefault(step["step"], set()).add(rel.split("/")[0])
        databases.update(step["databases"])
    chosen = choose(opened, template, stable)
    m = Matrix(template, opened, databases, chosen, [], baseline)
    for pattern, rel in sorted(chosen.items()):
        parts = {part_of[s] for s in opened[rel]}
        run = sorted(opened[rel] | {w for w in writers if part_of[w] in parts})  # what reads it, and a write
        plants = [p for p in PLANTS if p != "deep_json" or _looks_json(template / rel)]  # else: one more garbage
        if rel in databases:
            plants.append("link_out_empty")  # SQLite takes an empty file for a new database
        for plant in plants:
            used = {rel.split("/")[0]}.union(*(tops.get(s, set()) for s in run))
            m.jobs.append(Job(rel, pattern, plant, work / f"job{len(m.jobs)}", run, used))
    for folder in sorted({str(Path(rel).parent) for rel in chosen.values()}):
        if "/" not in folder or not folder.split("/")[0].endswith(".git"):
            continue  # the root or a mount's own folder: the user's, links and all
        if not (template / folder).is_dir():
            continue  # made by the run itself, and gone again
        inside = [rel for rel in chosen.values() if rel.startswith(folder + "/")]
        parts = {part_of[s] for rel in inside for s in opened[rel]}
        run = sorted(set().union(*(opened[rel] for rel in inside)) | {w for w in writers if part_of[w] in parts})
        used = {folder.split("/")[0]}.union(*(tops.get(s, set()) for s in run))
        m.jobs.append(Job(folder, norm(folder + "/x")[: -len("/x")], FOLDER_LINK, work / f"job{len(m.jobs)}", run, used))
    for job in m.jobs:
        job.folder.mkdir()
    runs = server.batch([prepare(m, job) for job in m.jobs])
    checks = [judge(m, job, answer) for job, answer in zip(m.jobs, runs, strict=True)]
    for job, answer in zip(m.jobs, server.batch(checks), strict=True):
        read_back(job, answer)
    for job in m.jobs:
        shutil.rmtree(job.folder, ignore_errors=True)
    return m


def known(o: Job) -> str | None:
    return KNOWN.get((o.pattern, o.plant)) or KNOWN.get((o.pattern, "*"))


def report(outcomes: list[Job]) -> str:
    return "\n".join(f"{o.rel} <- {o.plant}: " + "; ".join(o.problems) for o in outcomes)


def test_the_trace_finds_the_files_of_every_kind(matrix: Matrix, server: Server) -> None:
    """The workload reaches each kind's own files: a trace that misses them would test nothing."""
    patterns = set(matrix.chosen)
    for expected in (
        "<mount>.git/gitmem/write.lock",
        "<mount>.git/refs/heads/main",
        "<mount>.git/gitmem/recall/records-default.json",
        "<mount>.git/gitmem/derived/session-catalogue.json",
        "<mount>.git/gitmem/session-stats",
        "<mount>.git/gitmem/durable-ledger.sqlite#",
        "<mount>.git/gitmem/derived/listing",
        "<mount>.git/gitmem/last-pack",  # the latest commit's copy, read by a process that did not write it
        "<mount>.git/gitmem/index/MAIN_*.segment-file",
        "<mount>.git/HEAD",  # read by git children (push, pull, grep), which are not traced: their repository is
    ):
        assert expected in patterns, sorted(patterns)
    if server.semantic:
        assert "<mount>.git/gitmem/derived/semantic/vectors.sqlite#" in patterns
        assert "<mount>.git/gitmem/derived/semantic/refresh-*.json.lock" in patterns
    folders = {j.pattern for j in matrix.jobs if j.plant == FOLDER_LINK}
    for expected in ("gitmem", "gitmem/recall", "gitmem/derived", "gitmem/index", "objects/pack", "refs/heads"):
        assert f"<mount>.git/{expected}" in folders, sorted(folders)
    assert len(matrix.jobs) >= 5 * len(matrix.chosen)
    assert sum(j.reached for j in matrix.jobs) >= len(matrix.jobs) // 2  # the planted files are read again


def test_every_planted_file_ends_in_a_clear_error_or_a_skip(matrix: Matrix) -> None:
    failed = [o for o in matrix.jobs if o.problems and known(o) is None]
    assert not failed, f"{len(failed)} planted runs failed:\n" + report(failed)


@pytest.mark.xfail(strict=False, reason="documented waits (see KNOWN)")
def test_known_failures_of_other_readers(matrix: Matrix) -> None:
    failed = [o for o in matrix.jobs if o.problems and known(o) is not None]
    assert not failed, report(failed) + "\n" + "\n".join(sorted({known(o) or "" for o in failed}))

