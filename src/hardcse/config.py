"""Typed configurations: dataclasses with documented defaults, loaded from YAML, overridden by ``key=value``.

Every number of a method lives here with the paper's value or a documented default. A resolved config (every
default written out) is saved next to the results it produced.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hardcse.atomic import write_text_atomic
from hardcse.data.nli import DEV_FILES, TRAIN_FILES
from hardcse.data.sts import ALL_TASKS
from hardcse.errors import HardcseError

T = TypeVar("T")
TRAIN_IN_RUN = "train"  # ArtRunConfig.discriminator: train the discriminator inside the run


@dataclass
class EncoderTrainConfig:
    """Supervised or unsupervised SimCSE on sentence-transformers' trainer (SimCSE paper values where given)."""

    model: str = "bundled:minilm-l6"
    mode: str = "sup"  # sup: (anchor, positive, hard negative) triplets; unsup: each sentence twice, dropout
    pooling: str = "default"  # default (as the model has it) | cls | cls_mlp (SimCSE) | mean
    temperature: float = 0.05  # tau; the loss scale is 1 / tau
    epochs: float = 1.0
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 64
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.0
    max_seq_length: int = 32  # SimCSE's value
    eval_steps: int = 50  # STS-B dev every N steps; the best checkpoint is kept
    seed: int = 42
    max_examples: int | None = None  # take the first N training rows (quick runs)


@dataclass
class NLITrainConfig:
    """The NLI discriminator: a pretrained encoder + a one-hidden-layer MLP head, 3-way cross-entropy."""

    model: str = "bundled:minilm-l6"
    train_files: list[str] = field(default_factory=lambda: list(TRAIN_FILES))
    dev_files: list[str] = field(default_factory=lambda: list(DEV_FILES))
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    max_length: int = 128
    eval_steps: int = 500  # dev accuracy every N steps; the best checkpoint is kept
    length_grouped: bool = True  # batches of similar length: less padding, faster on CPU
    seed: int = 42
    max_examples: int | None = None  # take a random N of the training pairs (quick runs)


POSITIVE_PROMPT = (
    "Generate a positive variation of Original Sentence, ensuring it has same meaning, exhibits different "
    'syntactical and grammatical structures. Original: "[X]" Positive:'
)
NEGATIVE_PROMPT = (
    "Generate a negative variation of Original Sentence, ensuring it has a completely different meaning, "
    'similar syntax and grammar. Original: "[X]" Negative:'
)


@dataclass
class GeneratorConfig:
    """The LLM that writes positives and negatives: model, prompts (paper Table 1), LoRA, sampling."""

    model: str = "bundled:smollm2-135m"
    positive_prompt: str = POSITIVE_PROMPT  # [X] is replaced by the anchor
    negative_prompt: str = NEGATIVE_PROMPT
    # Replaces the chat template's default system prompt (SmolLM2's is 20 tokens of self-introduction);
    # null keeps the template's own, "" sends none where the template allows it.
    system_prompt: str | None = "You rewrite sentences."
    few_shot: list[dict] = field(default_factory=list)  # [{anchor, positive, negative}] shown before the anchor
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    max_new_tokens: int = 48
    temperature: float = 1.0
    top_k: int = 0  # 0: no top-k truncation
    top_p: float = 1.0
    batch_size: int = 16  # generation batch for synthesis
    seed: int = 42


@dataclass
class RewardConfig:
    """The dual reward r = w1*r1 + w2*r2 (ART). Omega and the alphas were chosen by measuring the bundled
    models on corpus anchors: see benchmarks/results/reward_calibration.md."""

    w1: float = 0.5  # correctness weight (paper)
    w2: float = 0.5  # difficulty weight (paper)
    # r1 = P(target | x, y) - omega. 0.31: the mean of the P(entailment) and P(contradiction) thresholds that
    # best separate gold-target from other pairs on the NLI dev files for the bundled discriminator (0.27, 0.36).
    omega: float = 0.31
    # Positives below this cosine are noise: r2 turns negative. 0.44: 5th percentile of cos(x, y) over gold
    # entailment dev pairs by the bundled encoder.
    alpha_pos: float = 0.44
    # Negatives above this cosine are near copies: r2 turns negative. 0.98: 95th percentile over gold
    # contradiction dev pairs (real contradictions are often one-word edits, so the bound sits high).
    alpha_neg: float = 0.98
    invalid_penalty: float = -1.0  # a rejected response: below every valid one whose cosine is >= 0 (min -0.66)


@dataclass
class PPOConfig:
    """PPO on a bandit environment (one prompt, one response, one reward), CleanRL-style, with TRL's PPO values
    as used by the ART authors' code where they differ from nothing."""

    steps: int = 30
    batch_size: int = 16  # rollouts per step, half positive and half negative prompts
    minibatch_size: int = 8
    ppo_epochs: int = 4
    learning_rate: float = 1.41e-5
    kl_coef: float = 0.2  # beta: per-token KL penalty against the adapter-free reference
    adaptive_kl: bool = True
    kl_target: float = 0.1
    kl_horizon: int = 10000
    gamma: float = 1.0
    lam: float = 0.95
    cliprange: float = 0.2
    cliprange_value: float = 0.2
    vf_coef: float = 0.1
    max_grad_norm: float = 1.0
    whiten_advantages: bool = True
    save_every: int = 10
    seed: int = 42


@dataclass
class AnchorConfig:
    """Anchors from an unlabeled corpus: filtered by length, shuffled once by seed, last ``held_out`` kept apart."""

    corpus: str | None = None  # None: the vendored Wikipedia sample; else a .txt / table file
    min_words: int = 6  # the corpus has headings ("YMCA in South Australia"); they make poor anchors
    max_words: int = 40
    held_out: int = 500  # never used for tuning or training: the raw-vs-tuned comparison reads them
    seed: int = 42


@dataclass
class FilterConfig:
    """The NLI filter of synthesis: a triplet is kept only when the discriminator agrees with both parts."""

    min_entailment: float = 0.5  # P(entailment | x, positive)
    min_contradiction: float = 0.5  # P(contradiction | x, negative)


@dataclass
class TuneConfig:
    """``hardcse tune-generator`` and ``hardcse generate``: the generator, its reward, PPO, anchors, filter."""

    encoder: str = "bundled:minilm-l6"  # the current encoder: judges difficulty
    pooling: str = "default"  # the encoder's pooling (see `hardcse eval --pooling`)
    discriminator: str = "runs/nli-minilm"  # an NLI model from `hardcse train-nli`: judges correctness
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    anchors: AnchorConfig = field(default_factory=AnchorConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)  # used by `hardcse generate`


@dataclass
class ArtRunConfig:
    """``hardcse art run``: round 0 evaluates the starting encoder; each round r = 1..rounds tunes the generator
    with PPO against the dual reward (difficulty judged by the current encoder), synthesises triplets for new
    anchors, filters them, trains the encoder further on them and evaluates it; round r + 1 uses that encoder."""

    encoder: str = "bundled:minilm-l6"  # round 0: the starting (supervised) encoder
    pooling: str = "default"
    # A folder from `hardcse train-nli`, or "train": train one into the run folder from `discriminator_training`.
    discriminator: str = "runs/nli-minilm"  # TRAIN_IN_RUN or a model source
    discriminator_training: NLITrainConfig = field(default_factory=NLITrainConfig)
    # An NLI model that is not the reward's, for the synthetic-data accuracy (paper Table 4); null: not measured.
    judge: str | None = None
    rounds: int = 3  # paper: 3
    tune_generator: bool = True  # false: the raw LLM writes the data (the paper's SimCSE* baseline)
    continue_generator: bool = True  # round r tunes on from round r - 1's generator (false: from the base model)
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    anchors: AnchorConfig = field(default_factory=AnchorConfig)
    synthesis_anchors: int = 1000  # new corpus anchors a round gets a positive and a negative for (paper: 20k)
    synthesis_temperature: float | None = 0.8  # sampling temperature of synthesis (authors' code: 0.8; PPO
    # samples at generator.temperature); null: generator.temperature
    filter: FilterConfig = field(default_factory=FilterConfig)
    # SimCSE on the kept triplets, from the previous round's encoder (its ``model`` and ``pooling`` are set by the
    # run; ``mode`` must be sup). Paper: 2 epochs,
    # lr 1e-7 to 2e-7 for BERT/RoBERTa-large on 20k triplets.
    encoder_training: EncoderTrainConfig = field(default_factory=EncoderTrainConfig)
    mix_triplets: str | None = None  # a triplet file whose rows are added to every round's training data
    mix_examples: int | None = None  # how many of them (the first N); null: all
    # The encoder a round hands on is the better of (trained, previous) on STS-B dev: a round never makes the
    # next round's difficulty judge worse on the selection split. false: always hand on the trained one.
    keep_better_encoder: bool = True
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))
    examples_per_round: int = 5  # example triplets in the report (paper Table 6)


@dataclass
class CurriculumConfig:
    """Data-CUBE: multi-task instruction-based contrastive training with a task and an instance curriculum.
    Paper values where given (INSTRUCTOR-large on MEDI: batch 64, lr 2e-5, warmup 0.1, tau 0.01, ~2M annealing
    iterations); the rest are documented defaults for a 2-core CPU."""

    model: str = "bundled:minilm-l6"  # the encoder trained
    scorer: str | None = None  # the pre-learned model for task vectors and difficulties; null: ``model``
    data: str = "builtin"  # builtin (the vendored collection) | a MEDI .json/.jsonl | a task folder
    max_per_task: int | None = 400  # instances kept per task (seeded sample); null: all
    task_order: str = "anneal"  # anneal (the task curriculum) | random
    instance_order: str = "easy_to_hard"  # easy_to_hard (the instance curriculum) | random
    schedule: str = "cycle"  # cycle: Algorithm 1 (walk the task order, one batch per task) | shuffle: all batches
    queries_per_task: int = 100  # n_t: instructed queries averaged into a task vector
    anneal_iterations: int = 2_000_000  # paper: ~2M (800K to 5M alike)
    initial_temperature: float = 1.0  # T0 (not given by the paper)
    cooling: float = 0.99999  # T <- cooling * T each iteration (not given by the paper)
    # delta: an instance with difficulty phi = sim(q,s+) - sim(q,s-) below it is too hard (likely noise): its loss
    # is masked out, its texts stay in the batch as negatives. The paper's text; its equation (9) says phi >= delta.
    mask_threshold: float | None = -0.2
    batch_size: int = 32  # paper: 64
    temperature: float = 0.01  # tau
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    epochs: float = 1.0
    max_seq_length: int = 64  # instructions make texts longer than SimCSE's 32
    eval_steps: int = 50  # STS-B dev every N steps; the best checkpoint is kept
    underfit_margin: float = 0.05  # the share of instances with phi below this is reported (paper Fig. 2)
    seed: int = 42


@dataclass
class DiffAugStage1Config:
    """Prefix-tuning: the encoder frozen, the prefixes + a classifier on [u; v; |u - v|] trained with cross-entropy
    on NLI pairs (premise through prefix 1, hypothesis through prefix 2). Paper (BERT-base): lr 1e-3, batch 128,
    2000 / 1500 / 1250 steps (semi / semi + aux / sup)."""

    steps: int = 2000
    batch_size: int = 128
    learning_rate: float = 1e-3
    classifier_learning_rate: float | None = None  # the [u; v; |u - v|] classifier's; null: learning_rate
    warmup_ratio: float = 0.0
    labels: str = "binary"  # binary: entailment (1) vs contradiction (0), as the released code | three_way
    diagnostics_every: int = 50  # delta and kappa every N steps (and at step 0)
    probe_pairs: int = 256  # entailment pairs (held out of training) that delta and kappa are measured on
    # Which prefixes stage 2 starts from: last (after ``steps``) | delta_peak (the diagnostics step where delta is
    # largest) | kappa_converged (stop once kappa changes by less than kappa_tolerance, relative, between checks)
    select: str = "last"
    kappa_tolerance: float = 0.01


@dataclass
class DiffAugStage2Config:
    """Joint tuning: encoder + prefixes with the SimCSE loss. Paper (BERT-base): lr 1e-5 / 1e-5 / 5e-5, batch
    256 / 256 / 128, epochs 1 / 1 / 3 (semi / semi + aux / sup); auxiliary NLI cross-entropy weight 1e-3."""

    epochs: float = 1.0
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 256
    learning_rate: float = 1e-5
    warmup_ratio: float = 0.0
    aux_weight: float = 0.0  # semi-supervised: weight of the NLI cross-entropy added to every step (paper 1e-3)
    train_prefixes: bool = True  # false: the prefixes stay as stage 1 left them (ablation)
    eval_steps: int = 50  # STS-B dev every N steps; the best checkpoint is kept


@dataclass
class DiffAugConfig:
    """DiffAug: two prefix modules as a learned, differentiable augmentation, trained in two stages.
    ``method: simcse`` trains the same data, steps and seed without prefixes (the baselines: dropout views for
    ``semi``, plain supervised SimCSE for ``sup``)."""

    model: str = "bundled:minilm-l6"
    pooling: str = "default"
    setting: str = "semi"  # semi: unlabeled sentences (+ optional aux NLI loss) | sup: NLI triplets
    method: str = "diffaug"  # diffaug | simcse (no prefixes, stage 2 only)
    stages: list[int] = field(default_factory=lambda: [1, 2])  # [1]: prefix-tuning only (ablation)
    prefixes: str = "different"  # different: theta_1 != theta_2 | same: one prefix module for both views
    prefix_length: int = 8  # virtual tokens per prefix module (paper: ~8 is best)
    prefix_hidden_size: int = 512  # the reparametrisation MLP's hidden width (P-tuning v2's default)
    nli_files: list[str] = field(default_factory=lambda: list(TRAIN_FILES))  # stage 1, aux loss, sup triplets
    nli_fraction: float = 1.0  # label-scarce runs: a seeded share of the NLI pairs / triplets (0.01, 0.1)
    unlabeled: str | None = None  # semi: a sentence file; null: the vendored Wikipedia sample
    max_examples: int | None = None  # stage 2: the first N training rows after shuffling (quick runs)
    temperature: float = 0.05  # tau of the SimCSE loss
    max_seq_length: int = 32  # training length (SimCSE's value); evaluation uses the model's own
    seed: int = 42
    stage1: DiffAugStage1Config = field(default_factory=DiffAugStage1Config)
    stage2: DiffAugStage2Config = field(default_factory=DiffAugStage2Config)
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check and convert a YAML value to a dataclass field type (int->float and str paths allowed)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except HardcseError as e:
                errors.append(str(e))
        raise HardcseError(errors[0])
    if origin is list:
        if not isinstance(value, list):
            raise HardcseError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(tp)
        return [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise HardcseError(f"{where}: expected a mapping, got {value!r}")
        return _from_dict(tp, value, where)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            raise HardcseError(f"{where}: expected float, got {value!r}") from None
    if tp is bool and not isinstance(value, bool):
        raise HardcseError(f"{where}: expected true/false, got {value!r}")
    if tp in (int, float, str) and (not isinstance(value, tp) or isinstance(value, bool) and tp is not bool):
        raise HardcseError(f"{where}: expected {tp.__name__}, got {value!r}")
    return value


def _from_dict(cls: type[T], data: dict, where: str) -> T:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise HardcseError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")
    return cls(**{k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()})


def _read_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """A config file's mapping; ``base: other.yaml`` (relative to the file) is read first and updated by the
    file's own keys, nested mappings key by key."""
    if not path.is_file():
        raise HardcseError(f"{path}: no such config file")
    if path.resolve() in seen:
        raise HardcseError(f"{path}: `base` files form a cycle")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise HardcseError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise HardcseError(f"{path}: the top level must be a mapping of keys to values")
    base = data.pop("base", None)
    if base is None:
        return data
    return _merge(_read_yaml(path.parent / base, (*seen, path.resolve())), data)


def _merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for key, value in update.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> T:
    """A ``cls`` from a YAML file (optional; ``base: FILE`` inherits another) with ``key=value`` overrides
    (``a.b=3``; values parsed as YAML)."""
    data: dict = {}
    where = cls.__name__
    if path is not None:
        data = _read_yaml(Path(path))
        where = str(path)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise HardcseError(f"override {item!r}: write key=value")
        target = data
        *parents, leaf = key.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = yaml.safe_load(raw) if raw else ""
    return _from_dict(cls, data, where)


def config_to_dict(config: Any) -> dict:
    return dataclasses.asdict(config)


def save_config(config: Any, path: str | Path) -> None:
    """Write the resolved config (every default spelled out) as YAML."""
    write_text_atomic(path, yaml.safe_dump(config_to_dict(config), sort_keys=False))
