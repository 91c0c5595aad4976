"""``gitmem sweep``: delete the expired items of a LangGraph store (see :mod:`gitmem.adapters.langgraph_store`).

Runs without the ``langgraph`` extra: the item files' rules live in
:mod:`gitmem.adapters.langgraph_items`, which imports no framework.
"""

from __future__ import annotations

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, origin_options, pass_state


@cli.command()
@click.argument("name")
@origin_options
@common_options
@pass_state
def sweep(state: State, name: str) -> None:
    """Delete the expired items of LangGraph store NAME, in one commit.

    An item put with a TTL is hidden from reads once it expires; this deletes the
    file (history keeps it; gitmem forget erases it). An item refreshed or
    rewritten while the sweep runs is kept. A file that is not an item (edited by
    hand or pushed) is skipped and listed with the reason.
    """
    from gitmem.adapters.langgraph_items import ItemCatalogue
    from gitmem.adapters.langgraph_items import sweep as sweep_items

    store = state.files(name)
    catalogue = ItemCatalogue(store)
    deleted = sweep_items(catalogue, origin=state.origin)
    skipped = dict(sorted(catalogue.skipped.items()))  # item files that do not parse, with the reason
    text = f"{name}: {deleted} expired item(s) deleted" + "".join(
        f"\nskipped {path}: {reason}" for path, reason in skipped.items()
    )
    emit({"memory": name, "deleted": deleted, "head": store.head(), "skipped": skipped}, text)
