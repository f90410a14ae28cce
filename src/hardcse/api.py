"""hardcse from Python: sentences in, a ``datasets.Dataset`` of hard triplets out (docs/python.md).

Each function is the command line's own code (the CLI calls the same stages), run in a run folder so that it
resumes and records what it did as the CLI does; ``out=None`` works in a temporary folder that is removed after.
A user's mistake raises :class:`hardcse.HardcseError` with a one-line message naming the key or the argument;
each call leaves torch's threads and the global random states as it found them, and ``progress=False`` turns its
progress bars off (hardcse/library_call.py). hardcse logs through the ``hardcse`` logger and installs no handler.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardcse.errors import HardcseError
from hardcse.library_call import library_call

if TYPE_CHECKING:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer

    from hardcse.art.config import ArtRunConfig, TuneConfig
    from hardcse.assay import AssayConfig
    from hardcse.discriminator.train import NLITrainConfig

SCORE_FIELDS = ("probs", "cosine", "r1", "r2", "reward")  # a kept row's scores, per kind, from synthetic.jsonl


@dataclass(frozen=True)
class GeneratedTriplets:
    """What :func:`generate_triplets` returns. ``dataset``: the kept triplets (``anchor, positive, negative``);
    ``scores``: with ``scores=True``, a dataset of the same rows with what decided each (the discriminator's
    probabilities, the cosines and reward terms), else None; ``anchors``: how many sentences it wrote for;
    ``dropped``: the anchors without a kept triplet, by reason; ``folder``: the run folder (None if temporary)."""

    dataset: Dataset
    anchors: int
    dropped: dict[str, int]
    scores: Dataset | None = None
    folder: Path | None = None


@dataclass(frozen=True)
class ArtRun:
    """What :func:`art_run` returns: the final encoder's folder, each round's STS record (round 0: the start
    encoder), the report's text and the run folder."""

    encoder: Path
    rounds: list[dict] = field(default_factory=list)
    report: str = ""
    folder: Path | None = None


def generate_triplets(
    sentences: Sequence[str] | Dataset,
    *,
    column: str = "text",
    config: str | Path | ArtRunConfig | TuneConfig = "quickstart",
    overrides: Sequence[str] = (),
    generator: str | Path | None = None,
    discriminator: str | Path | None = None,
    encoder: str | Path | None = None,
    scores: bool = False,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
) -> GeneratedTriplets:
    """ART's synthesis and filter on ``sentences`` (a list, or a ``Dataset`` and its ``column``): the generator
    writes a positive and a negative for each, the discriminator keeps the pairs it judges entailed and
    contradicting, and the kept rows come back as a ``Dataset`` that ``SentenceTransformerTrainer`` trains on.

    ``config``: an ART run config by name or file (``quickstart``, ``cpu-full``, ...) with ``overrides``
    (``"filter.candidates=4"``, as on the command line), or the config itself. ``generator``: the raw LM (default the
    config's) or a tuned generator folder (:func:`art_run` writes one per round, ``round_1/generator``).
    ``discriminator``: an NLI model folder; by default the config's, trained once per machine where the config says
    ``train`` (:func:`train_discriminator`). ``encoder``: the encoder whose cosines make the reward's difficulty
    term. ``out``: the run folder (``dataset/`` in it holds the rows as Parquet with a dataset card)."""
    from hardcse.art.config import TuneConfig
    from hardcse.art.synthesis.run import synthesis_run
    from hardcse.data.jsonl import read_jsonl
    from hardcse.data.triplet_dataset import triplet_dataset
    from hardcse.data.triplets import read_triplets

    texts = _sentences(sentences, column)
    with library_call(progress), ExitStack() as stack:
        tune = _tune_config(config, overrides)
        folder = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory())) / "run"
        if discriminator is None and tune.discriminator == "train":
            if isinstance(config, TuneConfig):
                raise HardcseError("discriminator: train needs an ART run config's discriminator_training; give "
                                   "discriminator=FOLDER with a TuneConfig")  # fmt: skip
            training = _art_config(config, overrides).discriminator_training
            discriminator = train_discriminator(training, progress=progress)
        swaps = {"discriminator": discriminator, "encoder": encoder}
        tune = replace(tune, **{k: str(v) for k, v in swaps.items() if v is not None})
        report = synthesis_run(
            tune,
            folder,
            generator=None if generator is None else str(generator),
            anchors=texts,
            resume=resume,
            command_line="hardcse.generate_triplets(...)",
        )
        kept = read_triplets(folder / "triplets.csv")
        scored = None
        if scores:
            records = [r for r in read_jsonl(folder / "synthetic.jsonl") if r["drop_reason"] is None]
            names = [f"{kind}_{part}" for kind in ("positive", "negative") for part in SCORE_FIELDS]
            scored = triplet_dataset(kept, {name: [r.get(name) for r in records] for name in names})
        return GeneratedTriplets(
            dataset=triplet_dataset(kept),
            anchors=report["anchors"],
            dropped=report["drop_reasons"],
            scores=scored,
            folder=Path(out) if out is not None else None,
        )


def train_discriminator(training: NLITrainConfig | None = None, *, progress: bool = True) -> Path:
    """The NLI discriminator ``training`` describes (default: the quickstart's, 8,000 pairs of its share), trained
    once per machine and kept in the model cache (``hardcse prepare`` trains the quickstart's): returns its
    folder there, or, where the cache cannot hold it (a full disk), the folder it trained in, under the system's
    temporary folder."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.kept import is_kept, train_or_copy

    training = training or load_config(ArtRunConfig, "quickstart").discriminator_training
    with library_call(progress):
        scratch = Path(tempfile.mkdtemp(prefix="hardcse-discriminator-"))
        entry = train_or_copy(training, scratch / "model")
        if not is_kept(entry):
            return scratch / "model"
        shutil.rmtree(scratch)
        return entry


def art_run(
    config: str | Path | ArtRunConfig = "quickstart",
    out: str | Path | None = None,
    *,
    overrides: Sequence[str] = (),
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> ArtRun:
    """ART's rounds (RL-tuned synthesis, the filter, supervised SimCSE, STS evaluation), as ``hardcse art run``
    runs them, into the run folder ``out`` (required: a run is worth keeping)."""
    from hardcse.art.run import art_run as run_rounds

    if out is None:
        raise HardcseError("art_run: give out=FOLDER, the run folder (its encoder and report stay there)")
    with library_call(progress):
        final = run_rounds(_art_config(config, overrides), out, resume=resume, overwrite=overwrite)
    folder = Path(out)
    rounds = sorted(folder.glob("round_*/eval.json"), key=lambda p: int(p.parent.name.split("_")[1]))
    return ArtRun(
        encoder=Path(final),
        rounds=[json.loads(p.read_text(encoding="utf-8")) for p in rounds],
        report=(folder / "report.md").read_text(encoding="utf-8"),
        folder=folder,
    )


def run_assay(
    data: Mapping[str, str | Path | Dataset],
    out: str | Path,
    *,
    config: str | Path | AssayConfig = "assay",
    overrides: Sequence[str] = (),
    resume: bool = False,
    progress: bool = True,
) -> str:
    """``hardcse assay``: each training set of ``data`` (name -> a triplet file, or a Dataset with anchor, positive
    and negative columns) trains the config's encoder on one fixed schedule per seed; every set is compared with the
    first by a paired bootstrap. Returns the comparison's Markdown (``out/assay.json`` holds it as data)."""
    from hardcse.assay import AssayConfig, assay_run
    from hardcse.config import load_config
    from hardcse.data.triplets import write_triplets

    base = config if isinstance(config, AssayConfig) else load_config(AssayConfig, config, list(overrides))
    folder = Path(out)
    files = []
    for name, source in data.items():
        if isinstance(source, (str, Path)):
            files.append(str(source))
            continue
        missing = [c for c in ("anchor", "positive", "negative") if c not in source.column_names]
        if missing:
            raise HardcseError(f"assay data {name!r}: no column {', '.join(missing)}; give anchor, positive, negative")
        path = folder.with_name(folder.name + "-data") / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_triplets(path, list(zip(source["anchor"], source["positive"], source["negative"], strict=True)))
        files.append(str(path))
    with library_call(progress):
        return assay_run(replace(base, data=files, names=list(data)), folder, resume=resume)


def evaluate_sts(
    model: str | Path | SentenceTransformer, tasks: Sequence[str] | None = None, *, progress: bool = True
) -> dict[str, Any]:
    """The STS suite (the seven tasks and STS-B dev, or ``tasks``) of an encoder (a SentenceTransformer, a folder,
    ``bundled:minilm-l6``): ``{"scores": {task: Spearman x 100}, "avg7": ..., "seconds": ...}``."""
    from hardcse.data.sts import ALL_TASKS, KNOWN_TASKS
    from hardcse.encoder.build import load_encoder
    from hardcse.evaluation.sts import evaluate_sts as evaluate

    tasks = list(tasks or ALL_TASKS)
    unknown = [t for t in tasks if t not in KNOWN_TASKS]
    if unknown:
        raise HardcseError(f"evaluate_sts: unknown task(s) {unknown}; known: {', '.join(KNOWN_TASKS)}")
    with library_call(progress):
        encoder = load_encoder(str(model)) if isinstance(model, (str, Path)) else model
        result = evaluate(encoder, tasks, show_progress=progress).to_dict()
    result.pop("cosines")
    return result


def load_encoder(source: str | Path = "bundled:minilm-l6") -> SentenceTransformer:
    """A SentenceTransformer from a model source as hardcse names them: ``bundled:minilm-l6`` (the encoder that
    ships), a folder, a finished run folder (its final encoder) or a hub id."""
    from hardcse.encoder.build import load_encoder as load

    return load(str(source))


def model_folder(source: str | Path) -> Path:
    """The local folder of a model source (``bundled:smollm2-135m`` is the generator's float checkpoint, converted
    from its GGUF once per machine): what ``from_pretrained`` loads."""
    from hardcse.resources import resolve_model

    return resolve_model(str(source))


def _sentences(sentences: Sequence[str] | Dataset, column: str) -> list[str]:
    from hardcse.art.synthesis.run import check_sentences

    names = getattr(sentences, "column_names", None)
    if names is not None:  # a datasets.Dataset
        if column not in names:
            raise HardcseError(
                f"sentences: the dataset has no column {column!r} (it has {', '.join(names)}); give column="
            )
        return check_sentences(sentences[column])
    return check_sentences(sentences)


def _art_config(config: str | Path | ArtRunConfig | TuneConfig, overrides: Sequence[str]) -> ArtRunConfig:
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config

    if isinstance(config, ArtRunConfig):
        return config
    if not isinstance(config, (str, Path)):
        raise HardcseError(f"config: {type(config).__name__}; give an ART run config's name, file or ArtRunConfig")
    return load_config(ArtRunConfig, config, list(overrides))


def _tune_config(config: str | Path | ArtRunConfig | TuneConfig, overrides: Sequence[str]) -> TuneConfig:
    from hardcse.art.config import TuneConfig
    from hardcse.art.run import tune_config

    if isinstance(config, TuneConfig):
        return config
    run = _art_config(config, overrides)
    tune = tune_config(run)
    if run.synthesis_temperature is None:
        return tune
    # as a run's synthesis samples (hardcse/art/run.py)
    return replace(tune, generator=replace(tune.generator, sampling_temperature=run.synthesis_temperature))
