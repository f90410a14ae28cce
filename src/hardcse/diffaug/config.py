"""DiffAug's configuration (``hardcse diffaug train``). Paper values (BERT-base) are the defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from hardcse.config import Checked, ConfigValueError, check_choice, check_positive, check_range
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.data.nli import TRAIN_FILES
from hardcse.data.sts import ALL_TASKS
from hardcse.encoder import PoolingName
from hardcse.engines import check_engine
from hardcse.tracking.config import Tracked
from hardcse.training import MOVED_TO_TRAINING, TrainingSettings


@dataclass
class DiffAugStage1Config(Checked):
    """Prefix-tuning: the encoder frozen, the prefixes + a classifier on [u; v; |u - v|] trained with cross-entropy
    on NLI pairs (premise through prefix 1, hypothesis through prefix 2). Paper (BERT-base): lr 1e-3, batch 128,
    2000 / 1500 / 1250 steps (semi / semi + aux / sup). No dev selection: the prefixes of the last step (or of the
    ``select`` rule) are kept."""

    steps: int = 2000
    batch_size: int = 128
    learning_rate: float = 1e-3
    classifier_learning_rate: float | None = None  # the [u; v; |u - v|] classifier's; null: learning_rate
    warmup_ratio: float = 0.0
    # binary: entailment (1) vs contradiction (0) pairs of the sampled triplets, as released | three_way: also the
    # neutral hypotheses of the same premises (labels the supervised SimCSE baseline does not use)
    labels: Literal["binary", "three_way"] = "binary"
    diagnostics_every: int = 50  # delta and kappa every N steps (and at step 0)
    probe_pairs: int = 256  # entailment pairs (held out of training) that delta and kappa are measured on
    # Which prefixes (with classifier and head) stage 2 starts from: last (after ``steps``) | delta_peak (the
    # diagnostics step where delta is largest, classifier and head of that step too) | kappa_converged (stop once
    # kappa changes by less than kappa_tolerance, relative, between checks)
    select: Literal["last", "delta_peak", "kappa_converged"] = "last"
    kappa_tolerance: float = 0.01

    def check(self) -> None:
        for key in ("steps", "batch_size", "learning_rate", "diagnostics_every", "probe_pairs", "kappa_tolerance"):
            check_positive(key, getattr(self, key))
        check_positive("classifier_learning_rate", self.classifier_learning_rate, allow_none=True)
        check_range("warmup_ratio", self.warmup_ratio, 0.0, 1.0)


@dataclass
class DiffAugStage2Config(Checked):
    """Joint tuning: encoder + prefixes with the SimCSE loss; its training settings are the config's ``training``
    block. Paper (BERT-base): lr 1e-5 / 1e-5 / 5e-5, batch 256 / 256 / 128, epochs 1 / 1 / 3 (semi / semi + aux /
    sup); auxiliary NLI cross-entropy weight 1e-3."""

    RENAMED: ClassVar[dict[str, str]] = {key: f"training.{key} (top level)" for key in MOVED_TO_TRAINING}
    aux_weight: float = 0.0  # semi-supervised: weight of the NLI cross-entropy added to every step (paper 1e-3)
    train_prefixes: bool = True  # false: the prefixes stay as stage 1 left them (ablation "fixed prefixes")
    train_encoder: bool = True  # false: the encoder stays frozen, only the prefixes train (ablation "prefix-only")

    def check(self) -> None:
        check_range("aux_weight", self.aux_weight, 0.0, 1e6)
        if not self.train_prefixes and not self.train_encoder:
            raise ConfigValueError("stage2.train_encoder", "with train_prefixes false too, stage 2 trains nothing")


def _stage2_training() -> TrainingSettings:
    return TrainingSettings(batch_size=256, learning_rate=1e-5, max_seq_length=32, eval_steps=50)


@dataclass
class DiffAugConfig(Tracked):
    """DiffAug: two prefix modules as a learned, differentiable augmentation, trained in two stages.
    ``method: simcse`` trains the same data, labels, steps and seed without prefixes (the baselines: SimCSE_joint
    for ``semi``, i.e. dropout views plus ``stage2.aux_weight`` times the NLI cross-entropy on the same labelled
    pairs; plain supervised SimCSE for ``sup``). ``training`` is stage 2's training; its ``seed`` and
    ``max_seq_length`` (SimCSE's 32) are stage 1's too."""

    RENAMED: ClassVar[dict[str, str]] = {**MOVED_TO_TRAINING, "model": "encoder", "temperature": "tau"}
    encoder: str = "bundled:minilm-l6"  # the encoder trained
    pooling: PoolingName = "default"
    setting: Literal["semi", "sup"] = "semi"  # semi: unlabeled sentences (+ optional aux NLI loss) | sup: triplets
    method: Literal["diffaug", "simcse"] = "diffaug"  # simcse: no prefixes, stage 2 only
    # [1]: stage 1 alone, its prefixes are the result (the paper's "prefix-tuning only" ablation runs stage 2 too,
    # with the encoder frozen: stage2.train_encoder false)
    stages: list[int] = field(default_factory=lambda: [1, 2])
    # A finished stage 1 (a run folder or its stage1/) to start stage 2 from instead of training one; its stage-1
    # values must equal this config's (checked).
    stage1_from: str | None = None
    prefixes: Literal["different", "same"] = "different"  # different: theta_1 != theta_2 | same: one module
    prefix_length: int = 8  # virtual tokens per prefix module (paper: ~8 is best)
    prefix_hidden_size: int = 512  # the reparametrisation MLP's hidden width (P-tuning v2's default)
    prefix_dropout: float = 0.1  # dropout on the prefix keys/values while training (released code: 0.1)
    # a Linear + Tanh head on the sentence embedding during training only, both stages and both methods (SimCSE's
    # and the released code's --mlp_train); it is not saved with the encoder
    mlp_head: bool = True
    # which prefixes encode at inference: both (the paper) | first | second (theta_1 or theta_2 alone) | dev (the
    # best of the three on STS-B dev, measured after training; never a test set)
    inference_prefix: Literal["both", "first", "second", "dev"] = "both"
    nli_files: list[str] = field(default_factory=lambda: list(TRAIN_FILES))  # stage 1, aux loss, sup triplets
    nli_fraction: float = 1.0  # label-scarce runs: a seeded share of the NLI pairs / triplets (0.01, 0.1)
    unlabeled: str | None = None  # semi: a sentence file; null: the vendored Wikipedia sample
    max_examples: int | None = None  # stage 2: the first N training rows after shuffling (quick runs)
    tau: float = 0.05  # the contrastive temperature of the SimCSE loss
    # NLI pairs and unlabeled sentences with a text that matches an STS test/dev text are dropped before the
    # label-scarce sample (hardcse/data/decontamination.py)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    stage1: DiffAugStage1Config = field(default_factory=DiffAugStage1Config)
    stage2: DiffAugStage2Config = field(default_factory=DiffAugStage2Config)
    training: TrainingSettings = field(default_factory=_stage2_training)
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))  # after training; [] for none
    # what encodes for stage 2's dev scores and the STS suite: auto | torch | openvino (hardcse/engines.py); an
    # encoder with prefixes stays in PyTorch
    engine: str = "auto"

    def check(self) -> None:
        check_engine("engine", self.engine)
        if not self.stages or any(s not in (1, 2) for s in self.stages) or len(set(self.stages)) != len(self.stages):
            raise ConfigValueError("stages", f"{self.stages}: use [1, 2], or [1] for prefix-tuning only")
        if self.method == "simcse" and self.stages != [1, 2]:
            raise ConfigValueError("stages", "method simcse has no stage 1 (no prefixes to tune); leave stages out")
        if self.method == "simcse" and self.stage1_from:
            raise ConfigValueError("stage1_from", "method simcse has no stage 1 (no prefixes to tune)")
        check_range("nli_fraction", self.nli_fraction, 1e-9, 1.0)
        if self.stage2.aux_weight > 0 and self.setting != "semi":
            raise ConfigValueError("stage2.aux_weight", "an auxiliary NLI loss exists only for setting semi")
        for key in ("prefix_length", "prefix_hidden_size", "tau"):
            check_positive(key, getattr(self, key))
        check_positive("max_examples", self.max_examples, allow_none=True)
        check_range("prefix_dropout", self.prefix_dropout, 0.0, 0.9)
        if self.method == "simcse" and self.inference_prefix != "both":
            raise ConfigValueError("inference_prefix", "method simcse has no prefixes; leave it out")
        if self.stages == [1] and self.inference_prefix != "both":
            raise ConfigValueError("inference_prefix", "it is chosen after stage 2; with stages [1] leave it out")
        if self.method == "simcse" and not self.stage2.train_encoder:
            raise ConfigValueError("stage2.train_encoder", "method simcse has no prefixes: it would train nothing")
        for task in self.eval_tasks:
            check_choice("eval_tasks", task, ALL_TASKS)

    @property
    def seed(self) -> int:
        return self.training.seed
