"""hardcse from Python: sentences in, a ``datasets.Dataset`` of hard triplets out (docs/python.md).

Each function is the command line's own code (the CLI calls the same stages), run in a run folder so that it
resumes and records what it did as the CLI does; ``out=None`` works in a temporary folder that is removed after.
A user's mistake raises :class:`hardcse.HardcseError` with a one-line message naming the key or the argument;
each call leaves torch's threads and the global random states as it found them, and ``progress=False`` turns its
progress bars off (hardcse/library_call.py). hardcse logs through the ``hardcse`` logger and installs no handler
on import (a run folder's ``run.log`` records, while a call runs, what that logger lets through: warnings unless
the user sets it to INFO, as the CLI does).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hardcse.errors import HardcseError
from hardcse.library_call import library_call

if TYPE_CHECKING:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer

    from hardcse.art.config import ArtRunConfig, TuneConfig
    from hardcse.assay import AssayConfig
    from hardcse.discriminator.train import NLITrainConfig

log = logging.getLogger(__name__)
T = TypeVar("T")


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
    licence: str | None = None,
    scores: bool = False,
    out: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> GeneratedTriplets:
    """ART's synthesis and filter on ``sentences`` (a list, or a ``Dataset`` and its ``column``): the generator
    writes a positive and a negative for each, the discriminator keeps the pairs it judges entailed and
    contradicting, and the kept rows come back as a ``Dataset`` that ``SentenceTransformerTrainer`` trains on.

    ``config``: a config by name or file with ``overrides`` (``"filter.candidates=4"``, as on the command line), or
    the config itself: an ART run config (``quickstart``, ``cpu-full``; its synthesis settings) or a ``hardcse art
    generate`` one (``tune-cpu``; the same file gives the CLI's triplets). ``generator``: the raw LM (default the
    config's) or a tuned generator folder (:func:`art_run` writes one a round, ``round_1/generator``).
    ``discriminator``: an NLI model folder; by default the config's, trained once per machine where an ART run
    config says ``train`` (:func:`train_discriminator`). ``encoder``: the encoder whose cosines make the reward's
    difficulty term. ``licence``: of the sentences, for the dataset card. ``out``: the run folder (its
    ``dataset/`` holds the rows as Parquet with a dataset card); None: a temporary one, removed after."""
    from hardcse.art.config import TRAIN_IN_RUN
    from hardcse.art.synthesis.run import synthesis_run
    from hardcse.data.jsonl import read_jsonl
    from hardcse.data.triplet_dataset import triplet_dataset
    from hardcse.data.triplets import read_triplets

    texts = _sentences(sentences, column)
    with _call(progress), ExitStack() as stack:
        run, tune = _generate_configs(config, overrides)
        folder = Path(out) if out is not None else _temporary(stack) / "run"
        if discriminator is None and tune.discriminator == TRAIN_IN_RUN:
            if run is None:
                raise HardcseError("discriminator: train needs an ART run config's discriminator_training; give "
                                   "discriminator=FOLDER with this config")  # fmt: skip
            discriminator = train_discriminator(
                run.discriminator_training, keep=run.keep_discriminator, progress=progress
            )
        swaps = {"discriminator": discriminator, "encoder": encoder}
        tune = replace(tune, **{k: str(v) for k, v in swaps.items() if v is not None})
        report = synthesis_run(
            tune,
            folder,
            generator=None if generator is None else str(generator),
            anchors=texts,
            resume=resume,
            overwrite=overwrite,
            command_line="hardcse.generate_triplets(...)",
            licence=licence,
        )
        kept = read_triplets(folder / "triplets.csv")
        if not kept:
            log.warning("no triplet kept of %d sentences (%s): give more sentences", len(texts), report["drop_reasons"])
        scored = None
        if scores:
            records = [r for r in read_jsonl(folder / "synthetic.jsonl") if r["drop_reason"] is None]
            scored = triplet_dataset(kept, {name: [r[name] for r in records] for name in _score_names(records)})
        return GeneratedTriplets(
            dataset=triplet_dataset(kept),
            anchors=report["anchors"],
            dropped=report["drop_reasons"],
            scores=scored,
            folder=Path(out) if out is not None else None,
        )


def train_discriminator(training: NLITrainConfig | None = None, *, keep: bool = True, progress: bool = True) -> Path:
    """The NLI discriminator ``training`` describes (default: the quickstart's, 8,000 pairs of its share), trained
    once per machine and kept in the model cache (``hardcse prepare`` trains the quickstart's): returns its folder
    there. Where the cache cannot hold it (a full disk), or with ``keep=False`` (trained again every call, as
    ``keep_discriminator: false`` asks), the folder it trained in, under the system's temporary folder."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.kept import is_kept, train_or_copy
    from hardcse.discriminator.train import NLITrainConfig, train_nli

    if training is None:
        training = load_config(ArtRunConfig, "quickstart").discriminator_training
    if not isinstance(training, NLITrainConfig):
        raise HardcseError(f"training: {type(training).__name__}; give an NLITrainConfig (or None: the quickstart's)")
    with _call(progress):
        scratch = Path(tempfile.mkdtemp(prefix="hardcse-discriminator-"))
        try:
            if not keep:
                train_nli(training, scratch / "model")
                return scratch / "model"
            entry = train_or_copy(training, scratch / "model")
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
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
    with _call(progress):
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
    overwrite: bool = False,
    progress: bool = True,
) -> str:
    """``hardcse assay``: each training set of ``data`` (name -> a triplet file, or a Dataset with anchor, positive
    and negative columns) trains the config's encoder on one fixed schedule per seed; every set is compared with the
    first by a paired bootstrap. Returns the comparison's Markdown (``out/assay.json`` holds it as data). A Dataset
    is written to ``OUT-data/NAME-DIGEST.csv`` first, named by its rows, so a resumed assay never reads other rows
    under an old name."""
    from hardcse.assay import NAME, AssayConfig, assay_run
    from hardcse.config import load_config
    from hardcse.data.triplets import write_triplets

    if not isinstance(data, Mapping) or not data:
        raise HardcseError("data: give a dict of training sets, name -> a triplet file or a Dataset")
    bad = [name for name in data if not isinstance(name, str) or not NAME.fullmatch(name)]
    if bad:
        raise HardcseError(f"data: name {bad[0]!r}; use letters, digits, '.', '_' and '-' (a folder is made of it)")
    if isinstance(config, AssayConfig):
        base = _config_object(config, overrides)
    else:
        base = load_config(AssayConfig, _config_name(config), _overrides(overrides))
    folder = Path(out).resolve()
    files = []
    for name, source in data.items():
        if isinstance(source, (str, Path)):
            files.append(str(source))
            continue
        missing = [c for c in ("anchor", "positive", "negative") if c not in getattr(source, "column_names", [])]
        if missing:
            raise HardcseError(f"data {name!r}: no column {', '.join(missing)}; give a file or a Dataset with them")
        rows = list(zip(source["anchor"], source["positive"], source["negative"], strict=True))
        digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]
        path = folder.parent / f"{folder.name}-data" / f"{name}-{digest}.csv"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_triplets(path, rows)
        files.append(str(path))
    with _call(progress):
        return assay_run(replace(base, data=files, names=list(data)), folder, resume=resume, overwrite=overwrite)


def evaluate_sts(
    model: str | Path | SentenceTransformer, tasks: Sequence[str] | None = None, *, progress: bool = True
) -> dict[str, Any]:
    """The STS suite (the seven tasks and STS-B dev, or ``tasks``) of an encoder (a SentenceTransformer, a folder,
    ``bundled:minilm-l6``): ``scores`` by task (Spearman x 100), ``avg7`` (None unless all seven STS tasks are
    among them), ``seconds``, ``n_sentences`` and the ``engine`` that encoded."""
    from sentence_transformers import SentenceTransformer

    from hardcse.data.sts import ALL_TASKS, KNOWN_TASKS
    from hardcse.evaluation.sts import evaluate_sts as evaluate

    if isinstance(tasks, str):
        raise HardcseError(f"tasks: give a list of task names, not one string (tasks=[{tasks!r}])")
    tasks = list(tasks or ALL_TASKS)
    unknown = [t for t in tasks if t not in KNOWN_TASKS]
    if unknown:
        raise HardcseError(f"evaluate_sts: unknown task(s) {unknown}; known: {', '.join(KNOWN_TASKS)}")
    if not isinstance(model, (str, Path, SentenceTransformer)):
        raise HardcseError(f"model: {type(model).__name__}; give a SentenceTransformer, a folder or a model name")
    with _call(progress):
        encoder = model if isinstance(model, SentenceTransformer) else load_encoder(model, progress=progress)
        result = evaluate(encoder, tasks, show_progress=progress).to_dict()
    result.pop("cosines")
    return result


def load_encoder(source: str | Path = "bundled:minilm-l6", *, progress: bool = True) -> SentenceTransformer:
    """A SentenceTransformer from a model source as hardcse names them: ``bundled:minilm-l6`` (the encoder that
    ships), a folder, a finished run folder (its final encoder) or a hub id."""
    from hardcse.encoder.build import load_encoder as load

    with _call(progress):
        return load(str(source))


def model_folder(source: str | Path, *, progress: bool = True) -> Path:
    """The local folder of a model source (``bundled:smollm2-135m`` is the generator's float checkpoint, converted
    from its GGUF once per machine): what ``from_pretrained`` loads."""
    from hardcse.resources import resolve_model

    with _call(progress):
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


@contextmanager
def _call(progress: bool) -> Iterator[None]:
    """:func:`library_call`, with a mistake's message in this module's terms: ``resume=True`` where the command
    line's says ``--resume`` (commands in backticks stay as they are)."""
    try:
        with library_call(progress):
            yield
    except HardcseError as e:
        raise HardcseError(python_terms(str(e))) from None


def python_terms(message: str) -> str:
    """``message`` with the command line's flags named as this module's arguments, outside backticks."""
    flags = {"--resume": "resume=True", "--overwrite": "overwrite=True", "--out": "out"}
    parts = message.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"--(resume|overwrite|out)\b", lambda m: flags[m.group(0)], parts[i])
    return "`".join(parts)


def _score_names(records: list[dict]) -> list[str]:
    """The fields of a kept record that scored it (probabilities, cosine, the reward's terms, the reward), per
    kind: every ``positive_*`` / ``negative_*`` field but the texts, the parse status and best of k's other
    candidates (in ``synthetic.jsonl``)."""
    texts = {"raw", "reason", "source", "others"}
    fields = records[0] if records else {}
    return [k for k in fields if k.startswith(("positive_", "negative_")) and k.split("_", 1)[1] not in texts]


def _temporary(stack: ExitStack) -> Path:
    from hardcse.distributed import world_size

    if world_size() > 1:  # every process would make a folder of its own; they must share one
        raise HardcseError("out: give a run folder under several processes (each would make a temporary one)")
    return Path(stack.enter_context(tempfile.TemporaryDirectory()))


def _overrides(overrides: Sequence[str]) -> list[str]:
    if isinstance(overrides, str):
        raise HardcseError(f"overrides: give a list of key=value strings, not one string (overrides=[{overrides!r}])")
    return list(overrides)


def _config_name(config: object) -> str | Path:
    if not isinstance(config, (str, Path)):
        raise HardcseError(f"config: {type(config).__name__}; give a config's name, its file or the config itself")
    return config


def _config_object(config: T, overrides: Sequence[str]) -> T:
    if _overrides(overrides):
        raise HardcseError("overrides: set the values on the config object itself (dataclasses.replace)")
    return config


def _art_config(config: str | Path | ArtRunConfig, overrides: Sequence[str]) -> ArtRunConfig:
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config

    if isinstance(config, ArtRunConfig):
        return _config_object(config, overrides)
    return load_config(ArtRunConfig, _config_name(config), _overrides(overrides))


def _generate_configs(
    config: str | Path | ArtRunConfig | TuneConfig, overrides: Sequence[str]
) -> tuple[ArtRunConfig | None, TuneConfig]:
    """The synthesis config of ``config``, and the ART run config it came from (None for a TuneConfig). A file is
    read as ``hardcse art generate`` reads it where it is a TuneConfig, else as an ART run config."""
    from hardcse.art.config import TuneConfig
    from hardcse.art.run import tune_config
    from hardcse.art.synthesis.run import synthesis_generation
    from hardcse.config import load_config

    if isinstance(config, TuneConfig):
        return None, _config_object(config, overrides)
    if isinstance(config, (str, Path)):
        try:
            return None, load_config(TuneConfig, config, _overrides(overrides))
        except HardcseError:
            pass  # an ART run config's keys (rounds, ...): read as one, whose error names a mistake in either
    run = _art_config(config, overrides)
    if run.negatives != "generated":
        raise HardcseError(f"negatives: {run.negatives}: generate_triplets writes generated negatives; mine them with "
                           "sentence_transformers.util.mine_hard_negatives (docs/python.md)")  # fmt: skip
    if run.warm_start.steps:
        raise HardcseError("warm_start.steps: generate_triplets runs no warm start; give generator=FOLDER, a "
                           "warm-started or tuned generator (art_run writes one)")  # fmt: skip
    return run, replace(tune_config(run), generator=synthesis_generation(run))
