"""Stage-1 diagnostics: representation divergence delta and weight convergence kappa, logged while prefix-tuning.

- delta = E ||f(x; theta_1) - f(x+; theta_2)||_2 over probe entailment pairs (x, x+): how far apart the two
  prefixes put a positive pair (``delta_same`` uses x+ = x, the semi-supervised views). The paper finds delta
  rising and then falling, with the best stage-1 length near its peak.
- kappa = mean over layers and over {K, V} of (||K||_{2,1} / L - ||P||_{2,1} / l): the mean row norm of the
  tokens' keys (values) minus that of the prefix's keys (values), ||A||_{2,1} being the sum of the row norms. It
  shrinks as the prefix vectors grow to the tokens' scale. Token rows are the real (unpadded) tokens of the probe
  premises; each prefix module is measured in its own view and the modules are averaged.
"""

from __future__ import annotations

import copy
import logging
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from torch import nn  # noqa: E402
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments  # noqa: E402

from hardcse.atomic import write_text_atomic  # noqa: E402
from hardcse.data.jsonl import append_jsonl, jsonl_text, read_jsonl_log  # noqa: E402
from hardcse.diffaug.objectives import embed  # noqa: E402
from hardcse.diffaug.prefix import PrefixedTransformer, prefixed  # noqa: E402
from hardcse.distributed import barrier, is_main  # noqa: E402
from hardcse.figures import save_png  # noqa: E402

log = logging.getLogger(__name__)
SELECTIONS = ("last", "delta_peak", "kappa_converged")
_KV_MODULE = re.compile(r"layer\.(\d+)\.attention\.self\.(key|value)$")  # BERT-family names (BERT, RoBERTa, MiniLM)


def _batches(model: SentenceTransformer, texts: list[str], batch_size: int = 64) -> list[dict[str, torch.Tensor]]:
    out = []
    for start in range(0, len(texts), batch_size):
        features = model.preprocess(texts[start : start + batch_size])
        out.append({k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()})
    return out


@torch.no_grad()
def representation_divergence(
    model: SentenceTransformer, sources: list[str], targets: list[str], views: tuple[int, int] = (0, 1)
) -> float:
    """delta: mean ||f(source; views[0]) - f(target; views[1])||_2 over aligned sentence lists."""
    total, count = 0.0, 0
    for a, b in zip(_batches(model, sources), _batches(model, targets), strict=True):
        u, v = embed(model, a, views[0]), embed(model, b, views[1])
        total += (u - v).norm(dim=-1).sum().item()
        count += len(u)
    return total / max(count, 1)


def _token_row_norms(model: SentenceTransformer, texts: list[str], view: int) -> dict[tuple[int, str], float]:
    """Per (layer, key|value): the mean L2 norm of the real tokens' rows, encoded through ``view``."""
    layers = [(name, m) for name, m in prefixed(model).model.named_modules() if _KV_MODULE.search(name)]
    captured: dict[tuple[int, str], torch.Tensor] = {}
    hooks = []
    for name, module in layers:
        match = _KV_MODULE.search(name)
        key = (int(match.group(1)), match.group(2))
        hooks.append(module.register_forward_hook(lambda _m, _i, out, key=key: captured.__setitem__(key, out)))
    sums: dict[tuple[int, str], float] = {}
    count = 0
    try:
        for features in _batches(model, texts):
            embed(model, features, view)
            valid = features["attention_mask"].bool()
            count += int(valid.sum())
            for key, out in captured.items():
                sums[key] = sums.get(key, 0.0) + out[valid].norm(dim=-1).sum().item()
    finally:
        for hook in hooks:
            hook.remove()
    return {key: total / count for key, total in sums.items()}


@torch.no_grad()
def weight_convergence(model: SentenceTransformer, texts: list[str]) -> float | None:
    """kappa on ``texts`` (see the module doc); None for an architecture without BERT-style key/value layers."""
    transformer = prefixed(model)
    if transformer is None:
        raise ValueError("kappa needs a model with prefixes")
    per_module = []
    for index in range(transformer.num_prefixes):
        tokens = _token_row_norms(model, texts, index)
        if not tokens:
            return None
        prefix = _prefix_rows(transformer, index)
        gaps = [tokens[key] - prefix[key].norm(dim=-1).mean().item() for key in tokens]
        per_module.append(sum(gaps) / len(gaps))
    return sum(per_module) / len(per_module)


def _prefix_rows(transformer: PrefixedTransformer, index: int) -> dict[tuple[int, str], torch.Tensor]:
    """Prefix module ``index``'s key and value rows per layer, each (l, hidden) with the heads concatenated."""
    out = transformer.prefixes[index](transformer.prefix_tokens)
    out = out.view(transformer.prefix_length, transformer.num_layers * 2, -1)
    return {
        (layer, kind): out[:, 2 * layer + (kind == "value")]
        for layer in range(transformer.num_layers)
        for kind in ("key", "value")
    }


class Stage1Diagnostics(TrainerCallback):
    """Measures delta and kappa on probe pairs at step 0 and every ``every`` steps, appends them to a JSONL file,
    and applies the stage-1 length rule: keeps the prefixes of the delta peak, or stops once kappa converges."""

    def __init__(
        self,
        model: SentenceTransformer,
        probe: tuple[list[str], list[str]],
        every: int,
        log_path: Path,
        select: str = "last",
        kappa_tolerance: float = 0.01,
        loss_modules: dict[str, nn.Module] | None = None,
    ) -> None:
        if select not in SELECTIONS:
            raise ValueError(f"select {select!r}: choose one of {', '.join(SELECTIONS)}")
        self.model = model
        self.premises, self.hypotheses = probe
        self.every = every
        self.log_path = log_path
        self.select = select
        self.kappa_tolerance = kappa_tolerance
        # trained beside the prefixes (the classifier, the MLP head): delta_peak keeps them from the same step
        self.loss_modules = {"prefixes": prefixed(model).prefixes, **(loss_modules or {})}
        self.rows: list[dict] = []
        self.best_state: dict | None = None
        self.best_delta = float("-inf")
        self.selected_step: int | None = None

    def measure(self, step: int, loss: float | None) -> dict:
        was_training = self.model.training
        self.model.eval()
        try:
            row = {
                "step": step,
                "delta": representation_divergence(self.model, self.premises, self.hypotheses),
                "delta_same": representation_divergence(self.model, self.premises, self.premises),
                "kappa": weight_convergence(self.model, self.premises),
                "train_loss": loss,
            }
        finally:
            self.model.train(was_training)
        self.rows.append(row)
        if is_main():  # every rank measures the same model; rank 0 writes
            with self.log_path.open("a", encoding="utf-8") as f:
                append_jsonl(f, row)
        log.info("stage 1 step %d: delta %.4f, kappa %s", step, row["delta"], row["kappa"])
        return row

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        if state.global_step == 0:
            if is_main():
                write_text_atomic(self.log_path, "")
            self._check(self.measure(0, None), control)
            return
        # resumed from a checkpoint: the rows up to it are kept (later ones and a torn line are redone)
        rows, _ = read_jsonl_log(self.log_path) if self.log_path.is_file() else ([], 0)
        for row in (r for r in rows if r["step"] <= state.global_step):
            self.rows.append(row)
            self._check(row, control, restoring=True)
        barrier()  # every rank has read the log before rank 0 rewrites it
        if is_main():
            write_text_atomic(self.log_path, jsonl_text(self.rows))
        best = self._best_path()
        if self.select == "delta_peak" and best.is_file():
            saved = torch.load(best, weights_only=True)
            if saved["step"] <= state.global_step:
                self.best_state, self.best_delta, self.selected_step = saved["state"], saved["delta"], saved["step"]

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        if state.global_step % self.every == 0 or state.global_step == state.max_steps:
            losses = [e["loss"] for e in state.log_history if "loss" in e]
            self._check(self.measure(state.global_step, losses[-1] if losses else None), control)

    def _best_path(self) -> Path:
        return self.log_path.with_name("delta_peak_prefixes.pt")

    def discard_saved_peak(self) -> None:
        """Once the stage is saved, the on-disk copy of the peak's prefixes is no longer needed."""
        if is_main():
            self._best_path().unlink(missing_ok=True)

    def _check(self, row: dict, control: TrainerControl, restoring: bool = False) -> None:
        if self.select == "delta_peak" and row["delta"] > self.best_delta and not restoring:
            self.best_delta = row["delta"]
            self.best_state = {name: copy.deepcopy(m.state_dict()) for name, m in self.loss_modules.items()}
            self.selected_step = row["step"]
            # kept on disk too, so a resumed stage 1 still knows the peak before the kill
            if is_main():
                tmp = self._best_path().with_suffix(".tmp")
                torch.save({"state": self.best_state, "delta": self.best_delta, "step": self.selected_step}, tmp)
                os.replace(tmp, self._best_path())
        elif self.select == "kappa_converged" and len(self.rows) >= 2 and row["kappa"] is not None:
            previous = self.rows[-2]["kappa"]
            if abs(row["kappa"] - previous) <= self.kappa_tolerance * max(abs(previous), 1e-12):
                self.selected_step = row["step"]
                control.should_training_stop = True

    def restore_selected(self) -> None:
        """For ``delta_peak``: put the prefixes (and the classifier and head) of the peak back."""
        if self.select == "delta_peak" and self.best_state is not None:
            for name, module in self.loss_modules.items():
                module.load_state_dict(self.best_state[name])


def plot_diagnostics(rows: list[dict], png_path: Path, selected_step: int | None = None) -> Path:
    """delta (and delta for x+ = x) and kappa against the stage-1 step, the chosen length marked."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    steps = [r["step"] for r in rows]
    panels = [
        ("delta", "delta: E||f(x;θ1) - f(x+;θ2)||"),
        ("delta_same", "delta with x+ = x"),
        ("kappa", "kappa: token minus prefix K/V row norm"),
    ]
    for ax, (key, title) in zip(axes, panels, strict=True):
        points = [(s, r[key]) for s, r in zip(steps, rows, strict=True) if r.get(key) is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker=".")
        if selected_step is not None:
            ax.axvline(selected_step, color="tab:red", linestyle="--", label=f"chosen: step {selected_step}")
            ax.legend()
        ax.set_title(title)
        ax.set_xlabel("stage-1 step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, png_path, dpi=120)
