"""``gitmem watch``: one line per ref change of the watched memories (see :mod:`gitmem.adapters.watch`)."""

from __future__ import annotations

import sys
import threading
import time
from types import FrameType

import click

from gitmem.adapters.cli.app import State, cli, common_options, pass_state, say, say_json


@cli.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--no-index", is_flag=True, help="Do not bring search indexes up to date after main moves.")
@click.option(
    "--debounce",
    type=click.FloatRange(0, 10),
    default=0.05,
    show_default=True,
    help="Seconds to let a burst of ref updates settle before the refs are read again.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop after this many seconds without a change (default: run until Ctrl-C).",
)
@click.option("--max-events", type=click.IntRange(min=1), help="Stop after printing this many changes.")
@common_options
@pass_state
def watch(
    state: State,
    names: tuple[str, ...],
    no_index: bool,
    debounce: float,
    timeout: float | None,
    max_events: int | None,
) -> None:
    """Print every ref change of memories NAME... (default: all, new ones included) as it happens.

    Changes made by anyone are seen: agents, pushes, plain git, git gc. Each line
    names the memory, the ref, the old and new commit, the changed paths and who
    made each new commit; --json prints one JSON object per line instead.
    """
    import signal  # here: building its enums costs every other command's start-up

    from gitmem.adapters.watch import watch as start_watch

    for name in names:
        state.store(name)  # unknown_memory now, before anything is printed
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_signal)
    printed = 0
    try:
        with start_watch(state.root, list(names) or None, debounce=debounce, index=not no_index) as changes:
            # On stderr, so stdout stays one change per line; scripts can wait for it.
            watched = ", ".join(changes.watcher.mounts) or "no memories yet"
            say(f"watching {watched} under {state.root.path}; Ctrl-C stops", err=True)
            idle_since = time.monotonic()
            while not stop.is_set():
                change = changes.get(0.2)
                if change is None:
                    if timeout is not None and time.monotonic() - idle_since >= timeout:
                        break
                    continue
                idle_since = time.monotonic()
                say_json(change.to_json()) if state.json else say(change.line())
                sys.stdout.flush()
                printed += 1
                if max_events is not None and printed >= max_events:
                    break
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
