"""A3S ``durable-memory-product-v1``: the p95 latency gate, from the tasks the arms ran.

The product evaluation (``tests/durable/test_a3s_product_multi_agent_eval.py``)
runs the fixture's ten tasks through three arms - no memory, session memory ("V1")
and durable recall ("V2") - and its tests check every gate that does not depend on
time. The latency gate, p95 of a task's latency at most the fixture's
``maximum_p95_latency_ms`` (10 s), is judged here instead of in a timed test: each
arm records how long each task's turn took (recall, the model call, extraction;
the model is the evaluation's deterministic stand-in, so the time is gitmem's),
``--rounds`` fresh runs of every arm are pooled, and the gate is applied to the
recorded numbers with the same :func:`latency_gate` the tests show failing.

Usage::

    .venv/bin/python bench/bench_a3s_product.py               # 5 rounds of each arm
    .venv/bin/python bench/bench_a3s_product.py --rounds 1 --workdir /mnt/ext4/x

Exits 1 when the gate fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.durable.a3s_evals import fixture
from tests.durable.test_a3s_product_multi_agent_eval import latency_gate, latency_holds, run_arm

ARMS = ("no_memory", "v1", "v2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workdir", help="a folder on the file system to measure (default: the temp folder)")
    args = parser.parse_args()
    pooled: dict[str, dict[str, list[float]]] = {arm: {"latencies_ms": []} for arm in ARMS}
    success: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            for arm in ARMS:
                report = run_arm(Path(tmp) / f"r{n}", arm)
                pooled[arm]["latencies_ms"].extend(report["latencies_ms"])
                success[arm].append(report["success"])
    p95s = latency_gate(pooled)
    limit = fixture("durable-memory-product-v1")["thresholds"]["maximum_p95_latency_ms"]
    print(f"durable-memory-product-v1, {args.rounds} rounds x 10 tasks per arm, task latency in ms")
    print(f"  {'arm':<10}{'tasks':>7}{'p50':>10}{'p95':>10}{'max':>10}{'success':>9}")
    for arm in ARMS:
        values = pooled[arm]["latencies_ms"]
        print(
            f"  {arm:<10}{len(values):>7}{statistics.median(values):>10.2f}{p95s[arm]:>10.2f}"
            f"{max(values):>10.2f}{statistics.mean(success[arm]):>9.2f}"
        )
    held = latency_holds(p95s)
    print(f"  gate: p95 <= {limit} ms in every arm: {'met' if held else 'FAILED'}")
    return 0 if held else 1


if __name__ == "__main__":
    raise SystemExit(main())
