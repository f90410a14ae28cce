"""The configuration of ART's reward, beside ART's other configs: the dual reward's constants and the terms a config
adds (``reward`` in ``TuneConfig`` and ``ArtRunConfig``, hardcse/art/config.py; computed by hardcse/art/reward/dual.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hardcse.art.log_keys import RESERVED_NAMES
from hardcse.art.reward.term_loading import NAME_PATTERN, load_term_function
from hardcse.config import Checked, ConfigValueError, check_choice, check_nonnegative, check_range
from hardcse.errors import HardcseError


@dataclass
class RewardTermConfig(Checked):
    """A term of the reward, a Python function (hardcse/art/reward/terms.py): ``fn`` is ``package.module:function`` or
    ``path/to/file.py:function``; it adds ``weight`` x its value to a parsed answer's reward. ``name`` (default:
    the function's name) labels it in logs, records, tables and plots."""

    fn: str = ""
    weight: float = 1.0
    name: str | None = None

    def check(self) -> None:
        if not self.fn:
            raise ConfigValueError("fn", "give the term's function, package.module:function or file.py:function")
        try:
            load_term_function(self.fn)
        except HardcseError as e:
            raise ConfigValueError("fn", str(e)) from None
        if not math.isfinite(self.weight):
            raise ConfigValueError("weight", f"{self.weight!r} must be a finite number")
        name = self.term_name
        if not NAME_PATTERN.fullmatch(name) or name in RESERVED_NAMES or name.startswith("reject_"):  # r1, r2 too
            raise ConfigValueError(
                "name",
                f"{name!r} cannot name a term: use letters, digits and _ (a letter first), not r1, r2 or a logged "
                "key (reward, kl, cosine, ...)",
            )

    @property
    def term_name(self) -> str:
        return self.name if self.name is not None else getattr(load_term_function(self.fn), "__name__", "term")


@dataclass
class RewardConfig(Checked):
    """The reward: ART's dual reward r = w1*r1 + w2*r2 (the correctness reward r1 and the difficulty reward r2)
    when ``dual`` is true, plus each of ``terms`` (hardcse/art/reward/terms.py). Omega and the alphas were chosen by
    measuring the bundled models on corpus anchors: see benchmarks/results/reward_calibration.md."""

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
    # Beside the paper's r2 (docs/art-evidence.md "A reward for hard and correct: options beside the paper").
    # r2_gate "judged": r2 counts only where the discriminator's predicted label is the target (a hard answer earns
    # only when it is also correct; 0 elsewhere); "none": the paper's. r2_smoothing w > 0: tanh((s - alpha) / w) in
    # place of sgn(s - alpha) (no cliff at alpha: a negative at cosine alpha_neg + 0.001 loses what one at
    # alpha_neg - 0.001 earns, smoothly); 0: the paper's sign.
    r2_gate: str = "none"
    r2_smoothing: float = 0.0
    invalid_penalty: float = -1.0  # a rejected response: below every valid one whose cosine is >= 0 (min -0.66)
    dual: bool = True  # false: the reward is the sum of ``terms`` alone (r1 and r2 neither counted nor logged)
    terms: list[RewardTermConfig] = field(default_factory=list)  # [{fn, weight, name}], added to the dual reward

    def check(self) -> None:
        for key in ("w1", "w2"):
            check_nonnegative(key, getattr(self, key))
        check_range("omega", self.omega, 0.0, 1.0)
        for key in ("alpha_pos", "alpha_neg"):
            check_range(key, getattr(self, key), -1.0, 1.0)
        check_range("invalid_penalty", self.invalid_penalty, -1e9, 0.0)
        check_choice("r2_gate", self.r2_gate, ("none", "judged"))
        check_range("r2_smoothing", self.r2_smoothing, 0.0, 1.0)
        if not self.dual and not self.terms:
            raise ConfigValueError("terms", "empty while dual is false: give a term, or set dual: true")
        names: list[str] = []
        for i, term in enumerate(self.terms):
            if term.term_name in names:
                raise ConfigValueError(f"terms[{i}].name", f"{term.term_name!r} names two terms; give each its own")
            names.append(term.term_name)
