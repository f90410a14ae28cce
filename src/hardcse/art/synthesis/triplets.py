"""ART's synthesis (``hardcse art generate``): a positive and a negative per anchor, scored, NLI-filtered.

Every generation is kept in ``synthetic.jsonl`` with its parse status and reward parts; the triplets that pass
the filter go to ``triplets.csv`` (SimCSE format). An anchor's texts depend only on the generator, the seed and
the anchor (a random stream per anchor and kind), not on ``generator.batch_size`` or the anchors beside it
(the PyTorch engine; OpenVINO GenAI draws one stream per batch, so there they depend on the batching too).
Under several processes each rank generates and scores every world_size-th batch of the one-process batching and
rank 0 merges them in anchor order, then mines, filters and writes: the files equal the one-process files (in
PyTorch; in OpenVINO a batch can read prompt-prefix blocks an earlier batch of its process prefilled, and so write
other samples in the cases hardcse/art/generator/openvino.py names).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardcse.art.config import FilterConfig, GeneratorConfig, MiningConfig
from hardcse.art.generator.parsing import Parsed, parse_response
from hardcse.art.generator.prompts import render_prompts
from hardcse.art.generator.sampling import row_seed
from hardcse.art.generator.stopping import token_limits
from hardcse.art.generator.texts import TextGenerator
from hardcse.art.reward.dual import Reward, RewardParts
from hardcse.art.synthesis.filter import chosen_candidate, drop_reason
from hardcse.art.synthesis.mining import mine_negatives
from hardcse.atomic import write_text_atomic
from hardcse.data.decontamination import Decontamination, DecontaminationConfig
from hardcse.data.jsonl import jsonl_text
from hardcse.data.triplet_dataset import triplet_dataset, write_triplet_dataset
from hardcse.data.triplets import write_triplets
from hardcse.distributed import gather_objects, rank_share, run_on_main
from hardcse.engines import Engine
from hardcse.progress import progress_bar


@dataclass
class SynthesisReport:
    anchors: int
    kept: int
    seconds: float
    tokens_per_second: float | None  # None where a batch's texts came from the cache: that stage wrote no token
    drop_reasons: dict[str, int]
    cached_batches: int = 0
    candidates: int = 1  # responses written per anchor and kind (filter.candidates)

    def to_dict(self) -> dict:
        speed = None if self.tokens_per_second is None else round(self.tokens_per_second, 1)
        return {
            "anchors": self.anchors,
            "kept": self.kept,
            "kept_fraction": self.kept / max(self.anchors, 1),
            "seconds": round(self.seconds, 1),
            "tokens_per_second": speed,
            "cached_batches": self.cached_batches,
            "candidates": self.candidates,
            "drop_reasons": self.drop_reasons,
        }


def synthesize(
    generator_source: str,
    anchors: list[str],
    generation: GeneratorConfig,
    reward: Reward,
    filter_config: FilterConfig,
    out_dir: str | Path,
    *,
    mine_from: list[str] | None = None,
    both_negatives: bool = False,
    mining: MiningConfig | None = None,
    decontamination: DecontaminationConfig | None = None,
    engine: Engine | None = None,
    cache_generations: bool = False,
    card: Mapping[str, object] | None = None,
) -> SynthesisReport:
    """Generate, score and filter; writes ``synthetic.jsonl``, ``triplets.csv`` and ``synthesis.json``.
    With ``mine_from`` (a corpus), the generator writes only positives and each negative is mined from the
    corpus by the reward's encoder (``mining``: the options of :func:`hardcse.art.synthesis.mining.mine_negatives`);
    with ``both_negatives`` too, the generator writes its negative as well and a kept row carries both (the
    generated one, then the mined one, ``mined_negative`` in the record: two negative columns).
    A triplet that passes the filter but has a text matching an evaluation text (``decontamination``, on by
    default) is dropped too, with reason ``eval_exact`` / ``eval_near`` and the match in its record. ``engine``:
    where the generator runs (hardcse/engines.py, default :meth:`Engine.from_environment`; OpenVINO samples one
    stream per batch, see module doc);
    ``cache_generations``: reuse the texts of an identical earlier generation (hardcse/art/generator/texts.py).
    ``filter_config.candidates`` k > 1: k responses per anchor and kind, the hardest that passes kept
    (hardcse/art/synthesis/filter.py); the record keeps the others. The kept rows also go to ``dataset/``, a folder
    ``datasets.load_dataset`` reads (hardcse/data/triplet_dataset.py), whose card names the generator, the filter
    and the counts, then ``card``'s items (the discriminator, the command, the sentences' source and licence)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    generator = TextGenerator(
        generator_source, generation, engine or Engine.from_environment(), cache=cache_generations
    )
    tokenizer = generator.tokenizer
    written_kinds = ("positive",) if mine_from is not None and not both_negatives else ("positive", "negative")
    tokens = cached_batches = 0
    start = time.perf_counter()
    n_candidates = filter_config.candidates  # responses per anchor and kind (best of k; 1: the paper's one)
    rows = generation.openvino_batch_size if generator.engine == "openvino" else generation.batch_size
    per_batch = max(1, rows // (len(written_kinds) * n_candidates))
    # anchors by length, so a batch pads little; records are written back in the anchors' order
    order = sorted(range(len(anchors)), key=lambda i: len(anchors[i]))
    batches = [order[i : i + per_batch] for i in range(0, len(anchors), per_batch)]
    by_position: dict[int, dict] = {}
    # several processes: each takes every world_size-th batch, the same batches one process would make, so the
    # merged file is the one-process file (module doc: PyTorch byte for byte)
    for rows in progress_bar([batches[k] for k in rank_share(len(batches))], desc="generate", unit="batch"):
        batch = [anchors[r] for r in rows]
        # rows in (kind, candidate, anchor) order: response (i, c, j) is row (i * n_candidates + c) * len(batch) + j
        kinds = [kind for kind in written_kinds for _ in range(n_candidates) for _ in batch]
        pair_anchors = batch * (len(written_kinds) * n_candidates)
        prompts = render_prompts(tokenizer, pair_anchors, kinds, generation)
        # each (anchor, kind, candidate) draws from its own stream: the text does not depend on the batching (module
        # doc); candidate 0 keeps the one-candidate stream, so k = 1 writes what it always wrote
        seeds = [
            row_seed(generation.seed, kind, anchor, *([str(c)] if c else []))
            for kind in written_kinds
            for c in range(n_candidates)
            for anchor in batch
        ]
        limits = token_limits(tokenizer, pair_anchors, generation)
        samples = generator.generate(prompts, groups=kinds, row_seeds=seeds, limits=limits)
        tokens += samples.tokens
        cached_batches += samples.from_cache
        parsed = [
            parse_response(t, a, truncated=c)
            for t, a, c in zip(samples.texts, pair_anchors, samples.truncated, strict=True)
        ]
        parts = reward(pair_anchors, parsed, kinds)
        for j, anchor in enumerate(batch):
            record: dict = {"anchor": anchor}
            for i, kind in enumerate(written_kinds):
                at = [(i * n_candidates + c) * len(batch) + j for c in range(n_candidates)]
                scored = [_scored(kind, samples.texts[row], parsed, parts, row) for row in at]
                record |= chosen_candidate(kind, anchor, scored, filter_config)
            by_position[rows[j]] = record
    shares = gather_objects((by_position, tokens, cached_batches))  # every rank's records (one process: its own)
    by_position = {position: record for share, _, _ in shares for position, record in share.items()}
    tokens = sum(n for _, n, _ in shares)
    cached_batches = sum(c for _, _, c in shares)
    records = [by_position[i] for i in range(len(anchors))]

    def filter_and_write() -> SynthesisReport:
        if mine_from is not None:
            field = "mined_negative" if both_negatives else "negative"
            _add_mined_negatives(records, mine_from, reward, mining or MiningConfig(), field)
        for record in records:
            record["drop_reason"] = drop_reason(record, filter_config)
        _drop_eval_matches([r for r in records if r["drop_reason"] is None], decontamination)
        seconds = time.perf_counter() - start
        write_text_atomic(out_dir / "synthetic.jsonl", jsonl_text(records))
        texts = ["anchor", "positive", "negative", *(["mined_negative"] if both_negatives else [])]
        kept = [tuple(r[k] for k in texts) for r in records if r["drop_reason"] is None]
        write_triplets(out_dir / "triplets.csv", kept)
        drops = dict(Counter(r["drop_reason"] for r in records if r["drop_reason"]).most_common())
        write_triplet_dataset(
            out_dir / "dataset",
            triplet_dataset(kept),
            {
                "generator": generator_source,
                "sampling": f"temperature {generation.sampling_temperature}, seed {generation.seed}, "
                f"{len(generation.few_shot)} demonstration(s), best of {n_candidates}",
                "negatives": "mined from a corpus by the encoder" if mine_from is not None else "generated",
                "filter": _filter_text(filter_config),
                "counts": {"anchors": len(records), "kept": len(kept)},
                "dropped": drops or {"none": 0},
                **(card or {}),
            },
        )
        report = SynthesisReport(
            anchors=len(records),
            kept=len(kept),
            seconds=seconds,
            # a speed only where every token was written now: texts copied from the cache are no speed
            tokens_per_second=(tokens / seconds if seconds else 0.0) if not cached_batches else None,
            drop_reasons=drops,
            cached_batches=cached_batches,
            candidates=n_candidates,
        )
        write_text_atomic(out_dir / "synthesis.json", json.dumps(report.to_dict(), indent=2))
        return report

    return run_on_main(filter_and_write)  # rank 0 mines, filters and writes the merged records


def _filter_text(config: FilterConfig) -> str:
    """The filter's rule in words, for the dataset card."""
    if config.rule == "none":
        return "none: every parsed pair kept (the paper's w/o-filter ablation)"
    if config.rule == "threshold":
        return f"threshold: P(entailment) >= {config.min_entailment}, P(contradiction) >= {config.min_contradiction}"
    return f"{config.rule} (margin {config.margin})"


def _drop_eval_matches(passed: list[dict], config: DecontaminationConfig | None) -> None:
    check = Decontamination(config or DecontaminationConfig())
    texts = ("anchor", "positive", "negative", "mined_negative")
    check.filter("synthetic", passed, lambda r: [(k, r[k]) for k in texts if k in r])
    for match in check.dropped:
        record = passed[match["row"] - 1]
        if record["drop_reason"] is None:  # a row's first match names it
            record["drop_reason"] = f"eval_{match['kind']}"
            record["eval_match"] = {k: match[k] for k in ("column", "eval_text", "eval_task", "similarity")}


def _scored(kind: str, raw: str | None, parsed: list[Parsed], parts: RewardParts, k: int) -> dict:
    """A record's fields for response ``k`` of a scored batch."""
    return {
        f"{kind}_raw": raw,
        kind: parsed[k].sentence,
        f"{kind}_reason": parsed[k].reason,
        f"{kind}_probs": None if not parts.valid[k] else [round(float(p), 5) for p in parts.probs[k]],
        f"{kind}_cosine": _number(parts.cosine[k]),
        **{f"{kind}_{name}": _number(values[k]) for name, values in parts.terms.items()},  # r1, r2, the config's
        f"{kind}_reward": _number(parts.reward[k]),
    }


def _add_mined_negatives(
    records: list[dict], corpus: list[str], reward: Reward, config: MiningConfig, field: str = "negative"
) -> None:
    """Each record's negative mined from ``corpus`` by the reward's encoder, scored like a generated one, as the
    record's ``field`` (``negative``, or ``mined_negative`` beside a generated one)."""
    anchors = [r["anchor"] for r in records]
    negatives = mine_negatives(anchors, [r["positive"] for r in records], corpus, reward.encoder, config)
    parsed = [Parsed(n) if n is not None else Parsed(None, "not_mined") for n in negatives]
    parts = reward(anchors, parsed, ["negative"] * len(records))
    for k, record in enumerate(records):
        record |= _scored(field, None, parsed, parts, k)
        if field == "negative":
            record["negative_source"] = "mined"


def _number(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 5)
