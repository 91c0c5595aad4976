"""The context budget: always-load allowance and pointers, even split, collapse, cut, change list to full."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import InMemoryFileStore
from gitmem.tools import FileMemoryLimits, FileMount, MemoryCursors
from gitmem.tools.budget import escape_json, fit_index, nbytes, water_fill
from tools.support import Agent, one, parse_block


def cost(pieces: list[str]) -> int:
    """Bytes of the lines as a block holds them, each with its newline."""
    return sum(nbytes(p) + 1 for p in pieces)


def store_with(files: dict[str, str]) -> InMemoryFileStore:
    store = InMemoryFileStore()
    for path, text in files.items():
        store.write(path, text, expected=None)
    return store


def test_an_always_load_file_over_the_allowance_becomes_a_pointer_to_view() -> None:
    store = store_with({"big.md": "b" * 500 + "\n", "small.md": "Short.\n"})
    agent = Agent([one(store, always_load=("big.md", "small.md"))], limits=FileMemoryLimits(always_load_bytes=200))
    files = parse_block(agent.context().text)[2]["files"]
    assert files[0]["path"] == "big.md" and "content" not in files[0]
    assert files[0]["size"] == 501 and "memory_file_view" in files[0]["note"]
    assert files[1] == {"path": "small.md", "content": "Short.\n"}


def test_each_memory_has_its_own_allowance_and_mount_order_decides_who_fits() -> None:
    text = "x" * 3000 + "\n"
    first, second = store_with({"a.md": text}), store_with({"b.md": text})
    mounts = [FileMount("first", first, always_load=("a.md",)), FileMount("second", second, always_load=("b.md",))]
    roomy = Agent(mounts, limits=FileMemoryLimits(always_load_bytes=4096)).context()
    assert [parse_block(b.text)[2]["files"][0].get("content") for b in roomy.blocks] == [text, text]
    tight = Agent(mounts, limits=FileMemoryLimits(context_bytes=5000, always_load_bytes=4096)).context()
    loaded = [("content" in parse_block(b.text)[2]["files"][0]) for b in tight.blocks]
    assert loaded == [True, False] and tight.size <= 5000


def test_water_fill_splits_evenly_and_hands_on_what_is_unused() -> None:
    assert water_fill([10, 1000, 1000], 1000) == [10, 495, 495]
    assert water_fill([100, 100], 1000) == [100, 100]
    assert water_fill([300, 50, 300], 400) == [175, 50, 175]
    assert water_fill([5], -3) == [0]


def test_a_small_index_hands_its_unused_share_to_a_big_one() -> None:
    small = store_with({"one.md": "One.\n"})
    big = store_with({f"f{i:03}.md": f"File {i}.\n" for i in range(200)})
    limits = FileMemoryLimits(context_bytes=3000)
    context = Agent([FileMount("small", small), FileMount("big", big)], limits=limits).context()
    small_block, big_block = context.blocks
    assert parse_block(small_block.text)[2]["index"] == ["one.md: One."]
    shown = parse_block(big_block.text)[2]["index"]
    # More than an even split of the 3000 bytes would allow, and nothing wasted.
    assert cost([escape_json(line) for line in shown]) > 1300
    assert 3000 - 40 < context.size <= 3000


def tree() -> dict[str, str]:
    files = {"top.md": "Top.\n"}
    files |= {f"archive/2023/q1/n{i:02}.md": f"Old note {i}.\n" for i in range(30)}
    files |= {f"archive/2024/m{i:02}.md": f"Note {i}.\n" for i in range(10)}
    files |= {f"people/p{i}.md": f"Person {i}.\n" for i in range(3)}
    return files


def index_at(share: int) -> list[str]:
    """The index when ``share`` bytes are left for it after the block's wrapper."""
    wrapper = Agent([one(InMemoryFileStore())]).context().size  # an empty index
    budget = wrapper + share
    context = Agent([one(store_with(tree()))], limits=FileMemoryLimits(context_bytes=budget)).context()
    assert context.size <= budget
    index: list[str] = parse_block(context.text)[2]["index"]
    return index


def test_an_index_over_its_share_collapses_the_deepest_folders_first() -> None:
    assert len(index_at(10_000)) == 44
    deep = index_at(1200)
    assert "archive/2023/q1/ (30 files)" in deep
    assert "archive/2024/m00.md: Note 0." in deep and "top.md: Top." in deep
    # Next depth up, the folder that saves most goes first; collapsing stops once the index fits.
    assert index_at(190) == [
        "archive/2023/q1/ (30 files)",
        "archive/2024/ (10 files)",
        "people/p0.md: Person 0.",
        "people/p1.md: Person 1.",
        "people/p2.md: Person 2.",
        "top.md: Top.",
    ]
    assert index_at(100) == [
        "archive/2023/ (30 files)",
        "archive/2024/ (10 files)",
        "people/ (3 files)",
        "top.md: Top.",
    ]
    assert index_at(60) == ["archive/ (40 files)", "people/ (3 files)", "top.md: Top."]
    # Then the lines are cut, and the pointer stays as long as it fits.
    assert index_at(50) == ["… 3 more; list them with memory_file_view"]
    assert index_at(40) == []


def test_an_index_that_still_does_not_fit_is_cut_with_a_pointer() -> None:
    store = store_with({f"n{i:03}.md": f"Note number {i}.\n" for i in range(300)})
    context = Agent([one(store)], limits=FileMemoryLimits(context_bytes=2000)).context()
    index = parse_block(context.text)[2]["index"]
    assert context.size <= 2000
    match = re.fullmatch(r"… (\d+) more; list them with memory_file_view", index[-1])
    assert match is not None
    assert int(match.group(1)) == 300 - (len(index) - 1)
    assert index[0] == "n000.md: Note number 0."


def test_a_change_list_over_its_share_is_sent_as_full_context() -> None:
    store = store_with({"keep.md": "Keep.\n"})
    cursors = MemoryCursors()
    limits = FileMemoryLimits(context_bytes=700)
    agent = Agent([one(store)], limits=limits, cursors=cursors)
    agent.context()
    store.write("batch/small.md", "Small.\n", expected=None)
    assert parse_block(agent.context().text)[0]["kind"] == "changes"
    for i in range(40):
        store.write(f"batch/imported-{i:02}.md", f"Imported item {i}.\n", expected=None)
    context = agent.context()
    attrs, _, data = parse_block(context.text)
    assert attrs["kind"] == "full" and context.size <= 700
    assert data["index"] == ["batch/ (41 files)", "keep.md: Keep."]
    assert agent.context().blocks == ()  # the cursor moved with the full context


def test_a_block_that_cannot_hold_even_its_wrapper_is_left_out() -> None:
    store = store_with({"a.md": "A.\n"})
    cursors = MemoryCursors()
    context = Agent([one(store)], limits=FileMemoryLimits(context_bytes=100), cursors=cursors).context()
    assert context.blocks == () and "user" in context.skipped and cursors.get("user") is None


paths = st.lists(
    st.lists(st.sampled_from(["a", "b", "cc", "d-d", "é"]), min_size=1, max_size=4).map("/".join),
    min_size=1,
    max_size=40,
    unique=True,
)


def _files(found: list[str]) -> int:
    total = 0
    for line in found:
        m = re.fullmatch(r".*/ \((\d+) files?\)", line)
        total += int(m.group(1)) if m else 1
    return total


@settings(max_examples=150, deadline=None)
@given(paths, st.integers(min_value=0, max_value=1500))
def test_fit_index_stays_within_its_allowance_and_loses_no_file_unless_it_says_so(
    candidates: list[str], allowance: int
) -> None:
    # Keep only paths that can coexist (no file is also a folder).
    chosen = sorted(p for p in candidates if not any(q.startswith(p + "/") for q in candidates))
    entries = [(p + ".md", None) for p in chosen]
    pieces = fit_index(entries, allowance)
    assert cost(pieces) <= allowance or pieces == []
    lines = [json.loads(p) for p in pieces]
    if lines and lines[-1].startswith("… "):
        hidden = int(lines[-1].split()[1])
        assert _files(lines[:-1]) <= len(entries) and hidden > 0
    elif lines:
        assert _files(lines) == len(entries)


@settings(max_examples=25, deadline=None)
@given(paths, st.integers(min_value=150, max_value=3000), st.integers(min_value=0, max_value=2000))
def test_the_whole_context_never_exceeds_context_bytes(candidates: list[str], budget: int, allowance: int) -> None:
    chosen = sorted(p for p in candidates if not any(q.startswith(p + "/") for q in candidates))
    store = store_with({p + ".md": f"About {p} & <stuff>.\n" * 5 for p in chosen})
    pinned = tuple(p + ".md" for p in chosen[:2])
    limits = FileMemoryLimits(context_bytes=budget, always_load_bytes=allowance)
    agent = Agent([one(store, always_load=pinned), FileMount("other", store)], limits=limits)
    assert agent.context().size <= budget
