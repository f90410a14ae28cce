"""The configuration of the generator's supervised warm start (``warm_start`` in ``TuneConfig`` and
``ArtRunConfig``; trained by hardcse/art/rl/warm_start.py). Off by default: the paper starts RL from the raw model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hardcse.config import Checked, ConfigValueError, check_choice, check_nonnegative, check_positive
from hardcse.data.nli import SHARES
from hardcse.devices import DTYPES

# NLI training splits only: never an evaluation file, and not SICK (its sentences overlap SICK-R's test set)
WARM_START_FILES = ["nli/SNLI-train-sample/train.tsv", "nli/MNLI-train-sample/train.tsv", "nli/CAD/train.tsv"]


@dataclass
class WarmStartConfig(Checked):
    """A supervised start of the generator's LoRA adapter before RL: NLI training pairs as the task's answers
    (premise -> entailed hypothesis under the positive prompt, premise -> contradicting hypothesis under the
    negative prompt), ``steps`` optimizer steps of ``batch_size`` pairs, half of each kind. ``steps: 0``: none."""

    steps: int = 0
    batch_size: int = 8
    learning_rate: float = 3e-4
    files: list[str] = field(default_factory=lambda: list(WARM_START_FILES))  # relative to the vendored data/
    # the third of the pairs (by premise, hardcse/data/nli.py SHARES) no discriminator or judge trained with
    # ``share: discriminator`` / ``judge`` sees; null: every pair of the files
    share: str | None = "warm_start"
    # answers the parser would reject are left out (hardcse/art/generator/parsing.py: 3 to 64 words)
    min_words: int = 3
    max_words: int = 40
    # leave out the pairs that teach a shortcut (SNLI's annotation artefacts): entailments whose hypothesis is a
    # deletion of its premise and contradictions whose hypothesis adds a negation word the premise lacks, by the
    # measures the shortcut rates use (hardcse/art/reward/shortcuts.py); off: every pair, as first measured
    drop_shortcuts: bool = False
    # the least share of a contradiction's content words that its premise has (hardcse/art/reward/shortcuts.py
    # anchor_cover); 0: every contradiction. Many of SNLI's contradictions describe another scene of the same photo
    # ("The cows are eating hay"), which after a sentence of a wiki page reads as unrelated, not contradicting; 0.5
    # keeps the contradictions that edit their premise (another fact, number or verb)
    negative_min_cover: float = 0.0
    # the same for an entailment's hypothesis: a high share keeps the positives that restate their premise and leaves
    # out those that add what the premise does not say (SNLI's "It's a pleasurable activity")
    positive_min_cover: float = 0.0
    # the base model's weights while the adapter trains: float32 with eager attention was the fastest on 2 cores
    # (3.2 s a step of 8 pairs on an AVX-512 EPYC; SDPA under bfloat16 autocast several times slower)
    dtype: str = "float32"
    seed: int = 1

    @property
    def enabled(self) -> bool:
        return self.steps > 0

    @property
    def pairs(self) -> int:
        """The pairs the training reads, each once."""
        return self.steps * self.batch_size

    def check(self) -> None:
        check_nonnegative("steps", self.steps)
        check_positive("batch_size", self.batch_size)
        check_positive("learning_rate", self.learning_rate)
        check_positive("min_words", self.min_words)
        for key in ("positive_min_cover", "negative_min_cover"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ConfigValueError(key, f"{getattr(self, key)}: give a share from 0 to 1")
        if self.max_words < self.min_words:
            raise ConfigValueError("max_words", f"{self.max_words} is below min_words {self.min_words}")
        if self.batch_size % 2:
            raise ConfigValueError("batch_size", f"{self.batch_size}: give an even number (half of each kind)")
        if not self.files:
            raise ConfigValueError("files", "give at least one NLI training file")
        sick = [f for f in self.files if "SICK" in f]
        if sick:
            raise ConfigValueError("files", f"{sick[0]}: SICK's sentences overlap SICK-R's test set; leave it out")
        check_choice("dtype", self.dtype, DTYPES)
        if self.share is not None:
            check_choice("share", self.share, SHARES)
