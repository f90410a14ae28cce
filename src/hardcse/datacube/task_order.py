"""Data-CUBE's task curriculum: a cyclic task order that keeps similar tasks next to each other.

The order maximises the tour similarity S(o) = sum_i sim(o_i, o_{i+1}) (indices mod m), a travelling-salesman
problem on task similarities, solved by simulated annealing as in the paper: start from a random
order; each iteration swaps two random positions; a swap that raises S is kept, one that lowers it is kept with
probability exp(-|Delta| / T); T <- cooling * T after every iteration. The best tour seen is returned, so the
result is never worse than the start.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def tour_similarity(order: Sequence[int], similarity: np.ndarray) -> float:
    """S(o): the sum of similarities of neighbouring tasks around the cycle."""
    m = len(order)
    if m < 2:
        return 0.0
    return float(sum(similarity[order[i], order[(i + 1) % m]] for i in range(m)))


def swap_delta(order: list[int], i: int, j: int, sim: list[list[float]]) -> float:
    """S after swapping positions i and j minus S before, from the (at most four) edges the swap touches."""
    m = len(order)
    edges = {(i - 1) % m, i, (j - 1) % m, j}  # edge k joins positions k and k + 1
    before = sum(sim[order[k]][order[(k + 1) % m]] for k in edges)
    order[i], order[j] = order[j], order[i]
    after = sum(sim[order[k]][order[(k + 1) % m]] for k in edges)
    order[i], order[j] = order[j], order[i]
    return after - before


@dataclass
class AnnealResult:
    order: list[int]
    similarity: float  # S of the returned order
    start_similarity: float  # S of the random starting order
    accepted: int  # swaps kept
    iterations: int


def anneal_task_order(
    similarity: np.ndarray,
    iterations: int = 2_000_000,
    t0: float = 1.0,
    cooling: float = 0.99999,
    seed: int = 42,
) -> AnnealResult:
    """The paper's simulated annealing over a symmetric similarity matrix; returns the best tour seen."""
    m = similarity.shape[0]
    rng = random.Random(seed)
    order = list(range(m))
    rng.shuffle(order)
    start = tour_similarity(order, similarity)
    if m < 4:  # every cyclic order of 3 or fewer tasks has the same neighbours
        return AnnealResult(order, start, start, 0, 0)
    sim = similarity.tolist()  # list indexing is several times faster than numpy scalars in this loop
    current = best = start
    best_order = order[:]
    temperature = t0
    accepted = 0
    randrange, uniform = rng.randrange, rng.random
    for _ in range(iterations):
        i, j = randrange(m), randrange(m)
        if i == j:
            temperature *= cooling
            continue
        delta = swap_delta(order, i, j, sim)
        if delta > 0 or (temperature > 0 and uniform() < math.exp(-abs(delta) / temperature)):
            order[i], order[j] = order[j], order[i]
            current += delta
            accepted += 1
            if current > best + 1e-12:
                best, best_order = current, order[:]
        temperature *= cooling
    return AnnealResult(best_order, tour_similarity(best_order, similarity), start, accepted, iterations)


def greedy_task_order(similarity: np.ndarray, start: int = 0) -> list[int]:
    """Nearest-neighbour tour: from ``start``, always go to the most similar unvisited task (a baseline)."""
    m = similarity.shape[0]
    order, left = [start], set(range(m)) - {start}
    while left:
        here = order[-1]
        nxt = max(left, key=lambda t: (similarity[here, t], -t))
        order.append(nxt)
        left.remove(nxt)
    return order


def random_task_order(m: int, seed: int = 42) -> list[int]:
    order = list(range(m))
    random.Random(seed).shuffle(order)
    return order
