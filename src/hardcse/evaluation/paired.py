"""Paired bootstrap of STS scores: is B better than A, beyond the luck of which pairs were tested and which
seeds were drawn?

Within each task the test pairs are resampled with replacement, the *same* resamples for every model (so what
the pairs have in common cancels out of a difference), and Spearman x 100 of cosine against gold is computed on
each resample; avg7 is the mean over the seven tasks of a resample. A group of runs that differ only by seed
scores the mean over its members; on each resample its members are drawn with replacement too, paired by seed
when both groups ran the same seeds (seed s of A beside seed s of B: same data sample and order), independently
otherwise, so the interval covers the spread between seeds as well as between test pairs. Members that come in
clusters (several training seeds on each generation run's data) are drawn by cluster: the clusters with
replacement (paired by cluster where both groups hold the same ones), each drawn cluster with all its members, so
the spread between clusters counts as the clusters' number, not the members'; the members' own spread is already
in each cluster's mean (resampling it again would count it twice: Davison & Hinkley 1997, section 3.8). With few
clusters a percentile interval would be too narrow (the bootstrap variance of a mean of G is (G-1)/G of the usual
estimate, and its quantiles are normal ones where t with G-1 degrees of freedom belongs), while the test pairs'
part of the spread is estimated from thousands of pairs and needs no such widening. So a clustered difference's
interval is the estimate +- sqrt(t_{G-1}^2 x G/(G-1) x V_clusters + z^2 x V_pairs), G the fewer clusters of the
two groups that have more than one: V_clusters the variance of B - A over the cluster draws scored on the test
pairs themselves (each member's estimate), V_pairs its variance over the test-pair resamples with every member
in. Each part has its own quantile, which is conservative against pooling them (Welch-Satterthwaite would give
t with more degrees of freedom on the sum). Such an interval keeps its standard error sqrt(G/(G-1) x V_clusters +
V_pairs) and those Welch-Satterthwaite degrees of freedom, from which ``hardcse.stats.detectable_difference``
reads the comparison's power. Otherwise the 2.5th and 97.5th percentiles of B - A give the 95%
interval. Two single models, or two identical groups, resample no
seeds. Vectorised: a resample is a count per pair, so ranks with ties averaged (as ``spearmanr`` ranks) come
from one sort per model and task and cumulative counts, and Spearman is a count-weighted correlation of them; no
loop over resamples and no sort per resample. Works from the per-pair cosines hardcse writes into ``eval.json``,
so no model is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hardcse.data.sts import SEVEN_TASKS, load_sts_task
from hardcse.errors import HardcseError
from hardcse.stats import SEED, Interval, clustered_half_width

RESAMPLES = 1000


def _resample_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Every item's rank within every resample, (n, R): resample r is the multiset in which item k appears
    ``counts[k, r]`` times; an item's rank there is the number of drawn values below it plus (the number of draws
    equal to it + 1) / 2, the average rank for ties that ``scipy.stats.rankdata`` gives the resampled vector. One
    sort per model and task instead of one per resample; items on the first axis, so every gather is of rows."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_value = np.r_[True, ordered[1:] != ordered[:-1]]
    per_value = counts[order]  # draws of each distinct value (summed over ties, when there are any)
    if not new_value.all():
        per_value = np.add.reduceat(per_value, np.flatnonzero(new_value), axis=0)
    midrank = np.cumsum(per_value, axis=0) - (per_value - 1) / 2
    ranks = np.empty(counts.shape)
    ranks[order] = midrank[np.cumsum(new_value) - 1]
    return ranks


def _weighted_centred(ranks: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return ranks - (counts * ranks).sum(axis=0) / counts.sum(axis=0)


def _spearman(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Spearman x 100 per resample (column) from centred ranks weighted by the draw counts; NaN where a resample
    has no spread (one pair drawn n times)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cov, vx, vy = ((counts * a * b).sum(axis=0) for a, b in ((x, y), (x, x), (y, y)))
        return 100 * cov / np.sqrt(vx * vy)


@dataclass
class ModelDraws:
    """One model's Spearman x 100 per task: on the test pairs themselves and on each resample."""

    estimate: dict[str, float]
    draws: dict[str, np.ndarray]  # (R,) per task


class STSBootstrap:
    """The shared resamples of each task's test pairs; every model drawn through one instance sees the same."""

    def __init__(
        self,
        tasks: Sequence[str],
        resamples: int = RESAMPLES,
        seed: int = SEED,
        gold: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        if resamples < 1:
            raise ValueError("resamples must be at least 1")
        rng = np.random.default_rng(seed)
        self.tasks = list(tasks)
        self.resamples = resamples
        self.seed = seed
        self.gold = {t: np.asarray(gold[t] if gold else load_sts_task(t).scores, dtype=np.float64) for t in tasks}
        self.counts, self._gold_ranks = {}, {}
        for t in tasks:
            n = len(self.gold[t])
            index = rng.integers(0, n, size=(resamples, n))
            offsets = (np.arange(resamples)[:, None] * n + index).ravel()
            counts = np.ascontiguousarray(np.bincount(offsets, minlength=resamples * n).reshape(resamples, n).T, float)
            self.counts[t] = counts
            self._gold_ranks[t] = _weighted_centred(_resample_ranks(self.gold[t], counts), counts)
        seven = all(t in self.tasks for t in SEVEN_TASKS)
        self.average, self.averaged = ("avg7", list(SEVEN_TASKS)) if seven else ("average", self.tasks)

    def draws(self, record: Mapping, name: str) -> ModelDraws:
        """The draws of the model whose ``eval.json`` record is ``record`` (``name`` for messages)."""
        estimate, draws = {}, {}
        for task in self.tasks:
            cosines = record.get("cosines", {}).get(task)
            if cosines is None:
                raise HardcseError(
                    f"{name}: its eval.json has no per-pair cosines for {task}; evaluate it again with this version "
                    "(`hardcse eval --model MODEL --out DIR`) to compare it with intervals"
                )
            cosines = np.asarray(cosines, dtype=np.float64)
            gold = self.gold[task]
            if len(cosines) != len(gold):
                raise HardcseError(f"{name}: {len(cosines)} cosines for {task}, whose test set has {len(gold)} pairs")
            ones = np.ones((len(gold), 1))
            x, y = (_weighted_centred(_resample_ranks(v, ones), ones) for v in (cosines, gold))
            estimate[task] = float(_spearman(x, y, ones)[0])
            counts = self.counts[task]
            draws[task] = _spearman(
                _weighted_centred(_resample_ranks(cosines, counts), counts), self._gold_ranks[task], counts
            )
        estimate[self.average] = float(np.mean([estimate[t] for t in self.averaged]))
        draws[self.average] = np.mean([draws[t] for t in self.averaged], axis=0)
        return ModelDraws(estimate, draws)

    def pairs_in(self, column: str) -> int:
        tasks = self.averaged if column == self.average else [column]
        return sum(len(self.gold[t]) for t in tasks)


def _member_choice(
    seeds_a: Sequence[int | None], seeds_b: Sequence[int | None], resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(R, k) member indices of each group for each resample: a group of one always takes its member; groups
    that ran the same distinct seeds draw the same seeds; other groups draw their members independently."""
    rng = np.random.default_rng(seed + 1)  # apart from the test-pair resamples

    def draw(k: int) -> np.ndarray:
        return rng.integers(0, k, size=(resamples, k)) if k > 1 else np.zeros((resamples, 1), dtype=np.int64)

    paired = (
        len(seeds_a) > 1
        and None not in seeds_a
        and len(set(seeds_a)) == len(seeds_a)
        and sorted(seeds_a) == sorted(seeds_b)  # type: ignore[type-var]
    )
    if paired:
        pick = draw(len(seeds_a))
        position = {s: i for i, s in enumerate(seeds_b)}
        to_b = np.array([position[s] for s in seeds_a])
        return pick, to_b[pick]
    return draw(len(seeds_a)), draw(len(seeds_b))


def _cluster_table(seeds: Sequence[int | None], clusters: Sequence[int | None]) -> tuple[list, np.ndarray]:
    """(cluster ids in order, (G, T) member indices: row g the members of cluster g ordered by seed). A member
    without a cluster is a cluster of its own; every cluster needs the same number of members T."""
    by_cluster: dict = {}
    for i, (s, c) in enumerate(zip(seeds, clusters, strict=True)):
        by_cluster.setdefault(("member", i) if c is None else ("cluster", c), []).append((s, i))
    sizes = {len(members) for members in by_cluster.values()}
    if len(sizes) > 1:
        counts = ", ".join(f"{key[1]}: {len(m)}" for key, m in by_cluster.items())
        raise HardcseError(f"every cluster of a group needs as many members as the others ({counts})")
    ids = sorted(by_cluster, key=str)
    # members in seed order (a member with no seed keeps its place)
    rows = [[i for _, i in sorted(by_cluster[c], key=lambda m: (m[0] is None, m[0] or 0, m[1]))] for c in ids]
    return ids, np.array(rows, dtype=np.int64)


def _cluster_choice(
    clusters_a: Sequence[int | None],
    clusters_b: Sequence[int | None],
    seeds_a: Sequence[int | None],
    seeds_b: Sequence[int | None],
    resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(R, G x T) member indices of each group for each resample: G clusters drawn with replacement, each with all
    its T members (in seed order), and each group's G. Groups that hold the same clusters draw the same ones."""
    rng = np.random.default_rng(seed + 1)  # apart from the test-pair resamples
    ids_a, table_a = _cluster_table(seeds_a, clusters_a)
    ids_b, table_b = _cluster_table(seeds_b, clusters_b)

    def draw(k: int) -> np.ndarray:
        return rng.integers(0, k, size=(resamples, k)) if k > 1 else np.zeros((resamples, 1), dtype=np.int64)

    pick_a = draw(len(ids_a))
    same_clusters = ids_a == ids_b and all(key[0] == "cluster" for key in ids_a)
    pick_b = pick_a if same_clusters else draw(len(ids_b))
    return table_a[pick_a].reshape(resamples, -1), table_b[pick_b].reshape(resamples, -1), len(ids_a), len(ids_b)


def _clustered_spread(between: np.ndarray, pairs: np.ndarray, clusters: int) -> tuple[float, float, float | None]:
    """The 95% half-width sqrt(t_{G-1}^2 x V_runs + z^2 x V_pairs) (module doc), V_runs = G/(G-1) x var(between),
    V_pairs = var(pairs); the standard error sqrt(V_runs + V_pairs); and its Welch-Satterthwaite degrees of freedom
    (G-1) x (V_runs + V_pairs)^2 / V_runs^2 (the pairs' part counts as infinite; None when V_runs is 0), with which
    detectable_difference reads the power. ``between``: B - A over the cluster draws on the test pairs themselves;
    ``pairs``: over the test-pair resamples."""
    runs, tests = clusters / (clusters - 1) * float(np.var(between)), float(np.nanvar(pairs))
    df = (clusters - 1) * (runs + tests) ** 2 / runs**2 if runs > 0 else None
    return clustered_half_width(runs, tests, clusters), float(np.sqrt(runs + tests)), df


def group_difference(
    a: Sequence[ModelDraws],
    b: Sequence[ModelDraws],
    boot: STSBootstrap,
    seeds_a: Sequence[int | None] | None = None,
    seeds_b: Sequence[int | None] | None = None,
    clusters_a: Sequence[int | None] | None = None,
    clusters_b: Sequence[int | None] | None = None,
) -> dict[str, Interval]:
    """mean(B) - mean(A) per task and for the average (columns every member has), each an :class:`Interval` whose
    estimate is the difference of the groups' mean scores on the test pairs themselves. With ``clusters`` (e.g.
    the generation run whose data trained each member) whole clusters are resampled (module doc)."""
    if not a or not b:
        raise ValueError("group_difference needs at least one model on each side")
    seeds_a = list(seeds_a) if seeds_a is not None else [None] * len(a)
    seeds_b = list(seeds_b) if seeds_b is not None else [None] * len(b)
    clusters = None  # the fewer clusters of the groups that have several: widens the interval (module doc)
    if clusters_a is None and clusters_b is None:
        pick_a, pick_b = _member_choice(seeds_a, seeds_b, boot.resamples, boot.seed)
    else:
        clusters_a = list(clusters_a) if clusters_a is not None else [None] * len(a)
        clusters_b = list(clusters_b) if clusters_b is not None else [None] * len(b)
        pick_a, pick_b, *counts = _cluster_choice(clusters_a, clusters_b, seeds_a, seeds_b, boot.resamples, boot.seed)
        clusters = min((g for g in counts if g > 1), default=None)
    rows = np.arange(boot.resamples)[:, None]
    out = {}
    for column in [*boot.tasks, boot.average]:
        if not all(column in m.draws for m in [*a, *b]):
            continue
        all_a = np.stack([m.draws[column] for m in a], axis=1)
        all_b = np.stack([m.draws[column] for m in b], axis=1)
        estimate = float(np.mean([m.estimate[column] for m in b]) - np.mean([m.estimate[column] for m in a]))
        # a resample that repeats one pair has no Spearman (NaN, as in scipy); it only happens on tiny tasks
        if clusters is None:
            draws = all_b[rows, pick_b].mean(axis=1) - all_a[rows, pick_a].mean(axis=1)
            low, high = np.nanpercentile(draws, [2.5, 97.5])
            out[column] = Interval(estimate, float(low), float(high), boot.pairs_in(column))
        else:
            est_a, est_b = (np.array([m.estimate[column] for m in g]) for g in (a, b))
            between = est_b[pick_b].mean(axis=1) - est_a[pick_a].mean(axis=1)
            half, se, df = _clustered_spread(between, all_b.mean(axis=1) - all_a.mean(axis=1), clusters)
            # se and df go with it: detectable_difference reads the power off them
            out[column] = Interval(estimate, estimate - half, estimate + half, boot.pairs_in(column), se, df)
    return out


def paired_sts_bootstrap(
    a: dict,
    b: dict,
    tasks: Sequence[str] = SEVEN_TASKS,
    names: tuple[str, str] = ("A", "B"),
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Interval]:
    """B - A per task and for their average (avg7 when ``tasks`` hold the seven), from two ``eval.json``
    records."""
    boot = STSBootstrap(tasks, resamples, seed)
    return group_difference([boot.draws(a, names[0])], [boot.draws(b, names[1])], boot)
