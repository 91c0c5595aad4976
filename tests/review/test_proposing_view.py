"""``proposing(run)``: a store view whose writes go to the run's proposal, gate or no gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.review import enabled, proposal


def test_a_proposing_view_never_writes_main(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "main's\n", expected=None)
    head = store.head()
    assert not enabled(store)
    view = store.proposing("carol-topic")
    view.write("b.md", "carol's\n", expected=None)
    assert store.head() == head, "main moved"
    assert view.read("b.md").text == "carol's\n"  # the run reads its own proposal
    assert proposal(store, "carol-topic").head == view.head()
    with pytest.raises(MemoryStoreError) as caught:
        store.read("b.md")
    assert caught.value.code == "not_found"
    # The ordinary run view of the same run, without the gate, still writes main.
    store.for_run("other-run").write("c.md", "c\n", expected=None)
    assert store.head() != head


def test_a_run_id_that_cannot_name_a_branch_is_refused(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    with pytest.raises(MemoryStoreError) as caught:
        store.proposing("../escape")
    assert caught.value.code == "forbidden"
