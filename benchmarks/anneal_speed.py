"""Data-CUBE's annealed task order: speed, and tour quality against a random order and a greedy tour.

    python benchmarks/anneal_speed.py [--tasks 330] [--iterations 2000000]

Task similarities: cosines of random task vectors built like real ones (a few shared topic directions plus
noise), for MEDI's 330 tasks; then the built-in collection's real matrix from a plan, if given (--plan).
Writes benchmarks/results/anneal_speed.{json,md}.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hardcse.datacube.task_order import anneal_task_order, greedy_task_order, random_task_order, tour_similarity
from lib.record import write_record


def synthetic_similarity(m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(12, 64))
    vectors = topics[rng.integers(0, 12, size=m)] + 0.8 * rng.normal(size=(m, 64))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit @ unit.T


def measure(name: str, sim: np.ndarray, iterations: int) -> dict:
    m = sim.shape[0]
    start = time.perf_counter()
    result = anneal_task_order(sim, iterations=iterations, seed=0)
    seconds = time.perf_counter() - start
    randoms = [tour_similarity(random_task_order(m, seed), sim) for seed in range(100)]
    greedy = max(tour_similarity(greedy_task_order(sim, s), sim) for s in range(min(m, 30)))
    return {
        "matrix": name,
        "tasks": m,
        "iterations": iterations,
        "seconds": round(seconds, 2),
        "iterations_per_second": round(iterations / seconds),
        "accepted": result.accepted,
        "tour_annealed": round(result.similarity, 3),
        "tour_random_mean": round(float(np.mean(randoms)), 3),
        "tour_random_best_of_100": round(float(np.max(randoms)), 3),
        "tour_greedy_best_of_30_starts": round(greedy, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=330)
    parser.add_argument("--iterations", type=int, default=2_000_000)
    parser.add_argument("--plan", help="a plan.json whose real similarity matrix is measured too")
    args = parser.parse_args()
    rows = [measure(f"synthetic, {args.tasks} tasks", synthetic_similarity(args.tasks, 0), args.iterations)]
    if args.plan:
        plan = json.loads(Path(args.plan).read_text())
        rows.append(measure(f"built-in collection ({args.plan})", np.array(plan["similarity"]), args.iterations))
    keys = list(rows[0])
    lines = [
        "Tour = sum of the similarities of neighbouring tasks around the cycle (higher is better).",
        "",
        "| " + " | ".join(keys) + " |",
        "|" + "---|" * len(keys),
        *("| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows),
        "",
    ]
    print(write_record("anneal_speed", "Annealed task order: speed and tour quality", lines, {"rows": rows}))


if __name__ == "__main__":
    main()
