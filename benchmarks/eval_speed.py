"""Wall time of the full STS suite (7 tasks + STS-B dev) on an encoder, against a plain sentence-transformers run.

    python benchmarks/eval_speed.py [--model bundled:minilm-l6] [--no-baseline]

The baseline is the obvious independent evaluation: `SentenceTransformer.encode(batch_size=128)` on the distinct
sentences, then sentence-transformers' own EmbeddingSimilarityEvaluator on each task. Both sets of scores are
recorded; they must agree to 0.01. Writes benchmarks/results/eval_speed.{json,md}.
"""

import argparse
import time

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from hardcse.data.sts import ALL_TASKS, load_sts_task
from hardcse.encoder.build import load_encoder
from hardcse.evaluation.sts import evaluate_sts
from hardcse.tables import sts_table_markdown
from lib.record import write_record


def baseline(model_source: str) -> tuple[dict[str, float], float, float]:
    """Scores by sentence-transformers alone, the seconds of the whole run and of encode alone."""
    start = time.perf_counter()
    model = load_encoder(model_source)
    tasks = [load_sts_task(t) for t in ALL_TASKS]
    sentences = sorted({s for t in tasks for s in (*t.sentences1, *t.sentences2)})
    encode_start = time.perf_counter()
    vectors = model.encode(sentences, batch_size=128, convert_to_numpy=True)
    encode_seconds = time.perf_counter() - encode_start
    lookup = dict(zip(sentences, vectors, strict=True))

    class CachedEvaluator(EmbeddingSimilarityEvaluator):  # each sentence encoded once, as in hardcse's suite
        def embed_inputs(self, model, sentences, **kwargs):
            return np.stack([lookup[s] for s in sentences])

    scores = {}
    for task in tasks:
        evaluator = CachedEvaluator(task.sentences1, task.sentences2, task.scores.tolist(), name=task.name)
        scores[task.name] = evaluator(model)[f"{task.name}_spearman_cosine"] * 100
    return scores, time.perf_counter() - start, encode_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled:minilm-l6")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    model = load_encoder(args.model)
    result = evaluate_sts(model, ALL_TASKS, show_progress=False)
    total = time.perf_counter() - start
    rows = {"hardcse eval": {**result.scores, "avg7": result.average}}
    record = {
        "model": args.model,
        "n_sentences": result.n_sentences,
        "hardcse_seconds_total": round(total, 1),
        "hardcse_seconds_suite": round(result.seconds, 1),
        "target_seconds": 60,
        "scores": result.scores,
        "avg7": result.average,
    }
    if not args.no_baseline:
        scores, seconds, encode_seconds = baseline(args.model)
        avg = float(np.mean([scores[t] for t in ALL_TASKS if t != "STS-B-dev"]))
        rows["sentence-transformers"] = {**scores, "avg7": avg}
        record |= {
            "baseline_seconds_total": round(seconds, 1),
            "baseline_seconds_encode": round(encode_seconds, 1),
            "baseline_scores": scores,
            "max_abs_difference": max(abs(scores[t] - result.scores[t]) for t in ALL_TASKS),
        }
    lines = [
        f"Model `{args.model}`; {result.n_sentences} distinct sentences.",
        "",
        f"- hardcse eval, whole run (load, read, encode, score): **{total:.1f} s** (target: at most 60 s)",
    ]
    if "baseline_seconds_total" in record:
        lines += [
            f"- plain sentence-transformers (encode batch 128 + EmbeddingSimilarityEvaluator): "
            f"{record['baseline_seconds_total']} s, of which encode {record['baseline_seconds_encode']} s",
            f"- largest score difference between the two: {record['max_abs_difference']:.4f}",
        ]
    lines += ["", sts_table_markdown(rows), ""]
    print(write_record("eval_speed", "STS suite wall time", lines, record))


if __name__ == "__main__":
    main()
