"""ART's configuration: the generator, the dual reward, RL (its settings in hardcse/art/rl/config.py), the anchors,
the NLI filter, and the run of rounds.

``TuneConfig`` (``hardcse art tune`` / ``generate``) is the tuning block; ``ArtRunConfig`` (``hardcse art run``)
extends it with the rounds, so the two never drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from hardcse.art.reward.config import RewardConfig
from hardcse.art.rl.config import RLConfig
from hardcse.art.warm_start_config import WarmStartConfig
from hardcse.config import Checked, ConfigValueError, check_choice, check_nonnegative, check_positive, check_range
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.data.sts import ALL_TASKS, DEV_TASK
from hardcse.devices import DTYPES, check_device
from hardcse.discriminator.train import NLITrainConfig
from hardcse.encoder import PoolingName
from hardcse.encoder.simcse import SimCSETraining
from hardcse.engines import check_engine
from hardcse.tracking.config import Tracked

TRAIN_IN_RUN = "train"  # ArtRunConfig.discriminator and .judge: train the model inside the run

POSITIVE_PROMPT = (
    "Generate a positive variation of Original Sentence, ensuring it has same meaning, exhibits different "
    'syntactical and grammatical structures. Original: "[X]" Positive:'
)
NEGATIVE_PROMPT = (
    "Generate a negative variation of Original Sentence, ensuring it has a completely different meaning, "
    'similar syntax and grammar. Original: "[X]" Negative:'
)


@dataclass
class GeneratorConfig(Checked):
    """The LLM that writes positives and negatives: model, prompts (paper Table 1), LoRA, sampling."""

    RENAMED: ClassVar[dict[str, str]] = {"temperature": "sampling_temperature"}
    model: str = "bundled:smollm2-135m"
    positive_prompt: str = POSITIVE_PROMPT  # [X] is replaced by the anchor
    negative_prompt: str = NEGATIVE_PROMPT
    # Replaces the chat template's default system prompt (SmolLM2's is 20 tokens of self-introduction);
    # null keeps the template's own, "" sends none where the template allows it.
    system_prompt: str | None = "You rewrite sentences."
    few_shot: list[dict] = field(default_factory=list)  # [{anchor, positive, negative}] shown before the anchor
    # null: every few_shot example before every anchor, in order (as written); k: a pool, k examples of it drawn
    # per anchor and kind (seeded by the anchor, the kind and generator.seed), so no one demonstration's words are
    # shown with every anchor (the leak measure: hardcse/art/reward/shortcuts.py)
    demonstrations: int | None = None
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    max_new_tokens: int = 48
    # Where a response ends (hardcse/art/generator/stopping.py): "eos", the model's end-of-sequence token (the
    # paper's), or "line": also the first line break, where the parser would cut the answer anyway
    stop: str = "eos"
    # null: every row may write max_new_tokens (the paper's); k: ceil(k * the anchor's tokens) + length_extra,
    # at most max_new_tokens
    length_budget: float | None = None
    length_extra: int = 8
    sampling_temperature: float = 1.0
    top_k: int = 0  # 0: no top-k truncation
    top_p: float = 1.0
    batch_size: int = 16  # generation batch for synthesis
    # The LM's weights: "auto" = bfloat16 where the device computes it natively (a CUDA GPU with bf16, a
    # CPU with AVX512-BF16 or AMX: 1.5-2.2x faster here, see benchmarks/results/art_speed.md), else float32.
    # LoRA weights stay float32 (PEFT casts the adapter up). float32 reproduces runs made before this option.
    dtype: str = "auto"
    device: str = "auto"  # auto | cpu | cuda | cuda:N (hardcse/devices.py): tuning and synthesis run there
    # Under the OpenVINO engine (hardcse/engines.py): float, or int8 (8-bit weights by NNCF, other samples), and
    # the rows of a synthesis batch: GenAI's continuous batching gains from more rows (on 2 cores 470 tokens/s at
    # 64 rows, 596 at 256: benchmarks/results/engine_speed.md; 512 rows were no faster, 641 against 650, and took
    # 0.9 GB more memory: benchmarks/results/synthesis_settings.md), where the PyTorch loop peaks at 64-128
    openvino_weights: str = "float"
    openvino_batch_size: int = 256
    seed: int = 42

    def check(self) -> None:
        for key in ("positive_prompt", "negative_prompt"):
            if "[X]" not in getattr(self, key):
                raise ConfigValueError(key, "must contain [X], where the anchor sentence goes")
        for i, example in enumerate(self.few_shot):
            if "anchor" not in example or not set(example) <= {"anchor", "positive", "negative"}:
                raise ConfigValueError(f"few_shot[{i}]", "give anchor and positive and/or negative")
        if self.demonstrations is not None:
            check_positive("demonstrations", self.demonstrations)
            for kind in ("positive", "negative"):
                pool = sum(kind in e for e in self.few_shot)
                if self.demonstrations > pool:
                    raise ConfigValueError(
                        "demonstrations",
                        f"{self.demonstrations} drawn per anchor but few_shot has {pool} {kind} examples; give "
                        "more examples or draw fewer",
                    )
        for key in (
            "lora_r",
            "lora_alpha",
            "max_new_tokens",
            "sampling_temperature",
            "batch_size",
            "openvino_batch_size",
        ):
            check_positive(key, getattr(self, key))
        check_range("lora_dropout", self.lora_dropout, 0.0, 1.0)
        check_range("top_p", self.top_p, 0.0, 1.0)
        check_nonnegative("top_k", self.top_k)
        check_positive("length_budget", self.length_budget, allow_none=True)
        check_nonnegative("length_extra", self.length_extra)
        check_choice("stop", self.stop, ("eos", "line"))
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("openvino_weights", self.openvino_weights, ("float", "int8"))
        check_device("device", self.device)


@dataclass
class AnchorConfig(Checked):
    """Anchors from an unlabeled corpus, read as a stream: filtered by length, in a seeded random order (keyed
    hashes), the last ``held_out`` kept apart (hardcse/art/synthesis/anchors.py)."""

    # None: the vendored Wikipedia sample; else a .txt (one sentence a line), .jsonl, .csv, .tsv or .parquet file,
    # or a folder written by datasets' save_to_disk
    corpus: str | None = None
    column: str = "text"  # the text column of a table, JSONL, Parquet file or dataset
    min_words: int = 6  # the corpus has headings ("YMCA in South Australia"); they make poor anchors
    max_words: int = 40
    # keep only a seeded uniform sample of this many distinct usable sentences (held_out included) while reading:
    # memory for them only, for a corpus too large to hold (the paper's 1M sentences); null: all of them
    max_anchors: int | None = None
    held_out: int = 500  # never used for tuning or training: the raw-vs-tuned comparison reads them
    seed: int = 42

    def check(self) -> None:
        check_positive("min_words", self.min_words)
        check_positive("max_anchors", self.max_anchors, allow_none=True)
        check_nonnegative("held_out", self.held_out)
        if self.max_words < self.min_words:
            raise ConfigValueError("max_words", f"{self.max_words} is below min_words {self.min_words}")


FILTER_RULES = ("argmax", "threshold", "none")


@dataclass
class FilterConfig(Checked):
    """The NLI filter of synthesis (hardcse/art/synthesis/filter.py): a triplet is kept only when the
    discriminator agrees with both parts. ``rule``: argmax (the paper's: the predicted label is the target, by
    ``margin`` over the others), threshold (P(target) >= ``min_entailment`` / ``min_contradiction``), none (every
    parsed pair: the paper's "w/o filter" ablation). Under argmax and threshold a negative labelled entailment, or a
    positive and negative sharing ``max_pair_overlap`` of their words or more, is never kept."""

    min_entailment: float = 0.5  # threshold: P(entailment | x, positive)
    min_contradiction: float = 0.5  # threshold: P(contradiction | x, negative)
    rule: str = "argmax"
    margin: float = 0.0  # argmax: P(target) - the largest other probability must be >= margin
    max_pair_overlap: float = 0.9  # Jaccard overlap of the positive's and negative's words; 1.0: identical only
    # Best of k (an option beside the paper, which samples one): the generator writes k candidates per anchor and
    # kind, and the filter keeps, of those that pass its checks of that kind, the hardest (the highest r2; the
    # highest reward where the reward has no r2); 1: one answer each, the paper's
    candidates: int = 1
    # Beside the paper: a generated answer taking a shortcut fails its kind (a positive that only deletes words of
    # its anchor, a generated negative that adds a negation word; hardcse/art/synthesis/filter.py)
    reject_shortcuts: bool = False

    def check(self) -> None:
        # above 1 keeps nothing: allowed, the raw-LLM and no-filter ablations use the bounds on purpose
        check_range("min_entailment", self.min_entailment, 0.0, 1.01)
        check_range("min_contradiction", self.min_contradiction, 0.0, 1.01)
        check_choice("rule", self.rule, FILTER_RULES)
        check_range("margin", self.margin, 0.0, 1.0)
        check_range("max_pair_overlap", self.max_pair_overlap, 0.0, 1.0)
        check_positive("candidates", self.candidates)


@dataclass
class MiningConfig(Checked):
    """``negatives: mined``: sentence-transformers' ``mine_hard_negatives`` options, as its docs recommend
    (NV-Retriever's TopK-PercPos: relative_margin 0.05, sampling "top"; candidates from the top ``range_max``)."""

    range_min: int = 0
    range_max: int = 50
    relative_margin: float = 0.05
    sampling_strategy: str = "top"

    def check(self) -> None:
        check_nonnegative("range_min", self.range_min)
        check_positive("range_max", self.range_max)
        if self.range_max <= self.range_min:
            raise ConfigValueError("range_max", f"{self.range_max} is not above range_min {self.range_min}")
        check_range("relative_margin", self.relative_margin, 0.0, 1.0)
        check_choice("sampling_strategy", self.sampling_strategy, ("top", "random"))


@dataclass
class TuneConfig(Tracked):
    """``hardcse art tune`` and ``hardcse art generate``: the generator, its reward, RL, anchors, filter."""

    encoder: str = "bundled:minilm-l6"  # the current encoder: judges difficulty
    pooling: PoolingName = "default"  # the encoder's pooling (see `hardcse eval --pooling`)
    discriminator: str = "runs/nli-minilm"  # an NLI model from `hardcse nli train`: judges correctness
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    # a supervised start of the generator's adapter on NLI pairs before RL (hardcse/art/rl/warm_start.py); off by
    # default (the paper tunes the raw model). On: RL tunes on from it and the raw baseline is it, untuned.
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    RENAMED: ClassVar[dict[str, str]] = {"ppo": "rl"}
    rl: RLConfig = field(default_factory=RLConfig)
    anchors: AnchorConfig = field(default_factory=AnchorConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)  # used by `hardcse art generate`
    # kept triplets with a text that matches an STS test/dev text are dropped (hardcse/data/decontamination.py)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    # Where the discriminator, the judge and the encoder run when they score (reward, filter, mining, judge):
    # auto | cpu | cuda | cuda:N (hardcse/devices.py). The generator has generator.device, training training.device.
    device: str = "auto"
    # What runs the forward passes that train nothing (synthesis, held-out comparison, evaluation, the reward's and
    # the held-out cosines): auto | torch | openvino (hardcse/engines.py). auto: OpenVINO on a CPU where installed.
    # Every training step runs in PyTorch; RL's rollouts too, unless rl.rollout_engine says otherwise.
    engine: str = "auto"
    # Reuse what this machine computed before for the same inputs instead of computing it again: a round's tuned
    # generator (<cache>/tuned/, hardcse/art/rl/tuned_cache.py) and the texts of synthesis and the held-out comparison
    # (<cache>/generations/). An ablation that shares a run's first round (without the filter) then skips its RL
    # and generation; a longer tuning whose first steps are a kept one's (one round) continues from it.
    # Off: every stage computes (the raw generator's held-out texts and the starting encoder's scores are cached
    # either way).
    reuse: bool = False

    def check(self) -> None:
        check_device("device", self.device)
        check_engine("engine", self.engine)


def _judge_training() -> NLITrainConfig:
    training = NLITrainConfig()
    return dataclasses.replace(training, share="judge", training=dataclasses.replace(training.training, seed=7))


@dataclass
class ArtRunConfig(TuneConfig):
    """``hardcse art run``: round 0 evaluates the starting encoder; each round r = 1..rounds tunes the generator
    with RL (``rl.algorithm``: PPO or GRPO) against the dual reward (difficulty judged by the current encoder),
    synthesises triplets for new anchors, filters them, trains the encoder further on them and evaluates it; round
    r + 1 uses that encoder.

    ``encoder`` is the starting (supervised) encoder; ``discriminator`` a folder from `hardcse nli train`, or
    "train": train one into the run folder from ``discriminator_training``."""

    discriminator_training: NLITrainConfig = field(default_factory=NLITrainConfig)
    # An NLI model that is not the reward's, for the synthetic-data accuracy (paper Table 4): a folder from
    # `hardcse nli train`, or "train": train one into the run folder from ``judge_training`` (kept on the machine
    # like the discriminator, ``keep_discriminator``); null: not measured.
    judge: str | None = None
    # By default on the judge's third of the NLI pairs (hardcse/data/nli.py SHARES), with another seed: give the
    # discriminator ``share: discriminator`` and the two never saw each other's pairs
    judge_training: NLITrainConfig = field(default_factory=lambda: _judge_training())
    rounds: int = 3  # paper: 3
    tune_generator: bool = True  # false: the raw LLM writes the data (the paper's SimCSE* baseline)
    # With discriminator: train, the trained model is kept on this machine and a later run with the same inputs
    # copies it (hardcse/discriminator/kept.py); false: train it in every run
    keep_discriminator: bool = True
    continue_generator: bool = True  # round r tunes on from round r - 1's generator (false: from the base model)
    synthesis_anchors: int = 1000  # new corpus anchors a round gets a positive and a negative for (paper: 20k)
    # Sampling temperature of synthesis (authors' code: 0.8; PPO samples at generator.sampling_temperature);
    # null: generator.sampling_temperature.
    synthesis_temperature: float | None = 0.8
    # SimCSE on the kept triplets, from the previous round's encoder (its encoder and pooling are the run's).
    # Paper: 2 epochs, lr 1e-7 to 2e-7 for BERT/RoBERTa-large on 20k triplets.
    encoder_training: SimCSETraining = field(default_factory=SimCSETraining)
    # shuffled: SimCSE's batches (the paper) | easy_to_hard: Data-CUBE's instance curriculum on the round's
    # triplets, phi = cos(x, y+) - cos(x, y-) by the round's starting encoder, batches in descending phi
    encoder_order: Literal["shuffled", "easy_to_hard"] = "shuffled"
    # Each round trains on at most the first N kept triplets (anchor order: a seeded draw from the corpus); null:
    # all it kept. Runs compared at one training-data size: ART's R rounds x N against a one-round baseline's R*N
    # (training.json records kept and used; a round that kept fewer than N says so in the report).
    triplets_per_round: int | None = None
    mix_triplets: str | None = None  # a triplet file whose rows are added to every round's training data
    mix_examples: int | None = None  # how many of them (the first N); null: all
    # The encoder a round hands on is the better of (trained, previous) on STS-B dev: a round never makes the
    # next round's difficulty judge worse on the selection split. false: always hand on the trained one.
    keep_better_encoder: bool = True
    # "generated": the generator writes the negative (ART); "mined": the generator writes only positives and
    # the negative is mined from the anchor corpus by the current encoder (hardcse/art/synthesis/mining.py; the filter
    # then checks positives only: a corpus sentence is rarely a contradiction of the anchor); "both": a row keeps
    # the generated negative (filtered as usual) and a mined one (not entailed) as two negative columns.
    negatives: str = "generated"
    mining: MiningConfig = field(default_factory=MiningConfig)
    # Each tuned round: the raw and the tuned generator write for the first N held-out anchors, compared with
    # bootstrap intervals (round_r/heldout.json, hardcse/art/synthesis/heldout.py); 0: not measured.
    heldout_anchors: int = 500
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))
    examples_per_round: int = 5  # example triplets in the report (paper Table 6)

    @property
    def evaluated_tasks(self) -> list[str]:
        """What each round's encoder is evaluated on: ``eval_tasks`` and STS-B dev, on which rounds select."""
        return list(dict.fromkeys([*self.eval_tasks, DEV_TASK]))

    def check(self) -> None:
        super().check()
        check_positive("rounds", self.rounds)
        check_positive("synthesis_anchors", self.synthesis_anchors)
        check_positive("synthesis_temperature", self.synthesis_temperature, allow_none=True)
        check_nonnegative("mix_examples", self.mix_examples, allow_none=True)
        check_positive("triplets_per_round", self.triplets_per_round, allow_none=True)
        check_nonnegative("examples_per_round", self.examples_per_round)
        check_choice("negatives", self.negatives, ("generated", "mined", "both"))
        check_nonnegative("heldout_anchors", self.heldout_anchors)
        if self.heldout_anchors > self.anchors.held_out:
            raise ConfigValueError(
                "heldout_anchors", f"{self.heldout_anchors} is more than anchors.held_out ({self.anchors.held_out})"
            )
        for task in self.eval_tasks:
            check_choice("eval_tasks", task, ALL_TASKS)
        if self.pooling == "cls_mlp":
            raise ConfigValueError(
                "pooling",
                "cls_mlp adds a freshly initialised head, a different one at every load; train it first "
                "(hardcse simcse train pooling=cls_mlp) and give the saved folder as encoder",
            )
