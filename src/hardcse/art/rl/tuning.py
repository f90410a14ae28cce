"""ART's generator tuning (Section 3.3): RL of the generator against the dual reward, logged and resumable.

PPO (the paper's) or GRPO, by ``rl.algorithm``. Work folder: ``rl_log.jsonl`` (one line per step),
``rl_curves.png``, ``checkpoint/`` (adapter + optimizer state, every ``save_every`` steps); the final adapter
with its log and curves goes to ``final_dir`` (a folder ``hardcse art generate`` takes). Under several processes
each rank samples its block of every step's rollouts (from its own random stream) and the updates average the
gradients (hardcse/art/rl/policy.py); rank 0 logs the ranks' mean numbers and writes the checkpoints.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from hardcse.art.analysis.plots import COMPLETIONS, RL_CURVES_PNG, RL_LOG, plot_rl_log
from hardcse.art.config import RLConfig, TuneConfig
from hardcse.art.generator.model import base_model_source, load_generator
from hardcse.art.generator.parsing import REASONS, parse_response
from hardcse.art.generator.prompts import KINDS, render_prompts
from hardcse.art.generator.stopping import token_limits
from hardcse.art.reward.dual import Reward
from hardcse.art.rl.grpo import GRPOTrainer
from hardcse.art.rl.policy import PolicyTrainer, saved_state_exists
from hardcse.art.rl.ppo import PPOTrainer
from hardcse.art.rl.tuned_cache import (
    copy_generator,
    is_cached,
    keep_generator,
    kept_prefix,
    start_from,
    tuned_cache_dir,
)
from hardcse.art.synthesis.anchors import anchors_for_step, split_anchors
from hardcse.atomic import recover_dir, replace_dir, write_text_atomic
from hardcse.data.jsonl import append_jsonl, jsonl_text, read_jsonl, read_jsonl_log
from hardcse.discriminator.nli import NLIDiscriminator, load_discriminator
from hardcse.distributed import is_main, mean_over_ranks, rank, rank_block, run_on_main, world_size
from hardcse.encoder.build import load_encoder
from hardcse.engines import select_engine
from hardcse.errors import HardcseError
from hardcse.tracking.run import active

log = logging.getLogger(__name__)


class ArtScore:
    """The RL score function: parse each response, then score it with the reward; logs the reward's parts (each
    term's mean and share) and the rejection reasons, and keeps the batch's rows for :meth:`completions`."""

    def __init__(self, reward: Reward, anchors: list[str], kinds: list[str]) -> None:
        self.reward, self.anchors, self.kinds = reward, anchors, kinds
        self.rows: list[dict] = []

    def __call__(self, texts: list[str], truncated: list[bool]) -> tuple[np.ndarray, dict]:
        anchors, kinds = self.anchors, self.kinds
        parsed = [parse_response(t, a, truncated=c) for t, a, c in zip(texts, anchors, truncated, strict=True)]
        parts = self.reward(anchors, parsed, kinds)
        reasons = Counter(p.reason for p in parsed if not p.ok)
        stats = parts.summary() | {f"reject_{r}": reasons.get(r, 0) / len(texts) for r in REASONS}
        for kind in KINDS:
            rows = np.array([k == kind for k in kinds])
            stats[f"reward_{kind}"] = float(parts.reward[rows].mean())
        self.rows = [
            {
                "anchor": anchors[i],
                "kind": kinds[i],
                "response": texts[i],
                "answer": parsed[i].sentence if parsed[i].ok else None,
                "reason": parsed[i].reason,
                "reward": float(parts.reward[i]),
                "terms": {name: _finite(values[i]) for name, values in parts.terms.items()},
            }
            for i in range(len(texts))
        ]
        return parts.reward, stats

    def completions(self, step: int, k: int, seed: int) -> list[dict]:
        """``k`` of the last batch's rows, a seeded draw (the same on a resumed run), in batch order."""
        rng = np.random.default_rng([seed, step])
        picked = sorted(rng.choice(len(self.rows), size=min(k, len(self.rows)), replace=False))
        return [{"step": step, "row": int(i)} | self.rows[i] for i in picked]


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def progress(stats: dict, term_names: list[str]) -> dict[str, str]:
    """The progress bar's numbers: the reward, each term's mean over parsed answers and its share, the KL."""
    shown = {"reward": f"{stats['reward']:.3f}"}
    for name in term_names:
        mean, share = stats.get(name), stats.get(f"share_{name}")
        shown[name] = "-" if mean is None else f"{mean:.3f}" + ("" if share is None else f" ({share:.0%})")
    return shown | {"kl": f"{stats.get('kl', float('nan')):.3f}"}


def step_prompts(config: TuneConfig, train_anchors: list[str], step: int) -> tuple[list[str], list[str], list]:
    """The anchors, kinds and prefix groups of step ``step``'s rollouts. PPO: ``batch_size`` anchors, positive
    and negative alternating (one prefix per kind). GRPO: ``batch_size / group_size`` anchors, alternating,
    each repeated ``group_size`` times (a group shares its whole prompt)."""
    rl = config.rl
    if rl.algorithm == "grpo":
        anchors = anchors_for_step(train_anchors, step, rl.batch_size // rl.group_size)
        kinds = [KINDS[i % 2] for i in range(len(anchors))]
        repeat = rl.group_size
        return (
            [a for a in anchors for _ in range(repeat)],
            [k for k in kinds for _ in range(repeat)],
            [i for i in range(len(anchors)) for _ in range(repeat)],
        )
    anchors = anchors_for_step(train_anchors, step, rl.batch_size)
    kinds = [KINDS[i % 2] for i in range(rl.batch_size)]
    return anchors, kinds, kinds


def make_trainer(model: object, tokenizer: object, config: TuneConfig) -> PolicyTrainer:
    trainer = GRPOTrainer if config.rl.algorithm == "grpo" else PPOTrainer
    return trainer(model, tokenizer, config.generator, config.rl)


def tune_generator(
    config: TuneConfig,
    work_dir: str | Path,
    final_dir: str | Path,
    train_anchors: list[str] | None = None,
    discriminator: NLIDiscriminator | None = None,
) -> Path:
    """Run ``config.rl.steps`` RL steps in ``work_dir`` (continuing from its checkpoint, if any); writes the
    tuned generator to ``final_dir`` and returns it. Step ``t`` reads the ``t``-th slice of ``train_anchors``
    (default: the training part of the anchor split). ``discriminator`` saves loading ``config.discriminator``."""
    out_dir = Path(work_dir)
    final = Path(final_dir)
    checkpoint = out_dir / "checkpoint"
    log_path = out_dir / RL_LOG
    out_dir.mkdir(parents=True, exist_ok=True)

    if train_anchors is None:
        train_anchors = split_anchors(config.anchors).train
    kept = tuned_cache_dir(config, train_anchors) if config.reuse else None
    if kept is not None and is_cached(kept):  # tuned before on this machine from the same inputs
        log.info("the tuned generator of these inputs was kept in %s: copied, no RL", kept)
        run_on_main(lambda: copy_generator(kept, final))
        if is_main():
            report_kept_logs(final, active().job(out_dir))
        return final
    discriminator = discriminator or load_discriminator(config.discriminator, config.device)
    reward = Reward(discriminator, load_encoder(config.encoder, config.pooling, device=config.device), config.reward)
    check_rank_shares(config.rl)
    run_on_main(lambda: recover_dir(checkpoint))  # a kill mid-replacement leaves a complete checkpoint in place
    prefix = None if kept is None or saved_state_exists(checkpoint) else kept_prefix(kept, config, train_anchors)
    if prefix is not None:  # its first steps were tuned before on this machine (tuned_cache.py)
        log.info("steps 1-%d of these inputs were kept in %s: RL continues from there", prefix[1], prefix[0])
        run_on_main(lambda: start_from(prefix[0], checkpoint, out_dir))
        if is_main():
            report_kept_logs(out_dir, active().job(out_dir))  # the kept steps' curves, then the new steps'
    resuming = saved_state_exists(checkpoint)
    source = str(checkpoint) if resuming else config.generator.model
    torch.manual_seed(config.rl.seed)  # a fresh LoRA adapter's initial weights: the same in every process
    model, tokenizer = load_generator(source, config.generator, trainable=True)
    trainer = make_trainer(model, tokenizer, config)
    if resuming:
        trainer.load_state(checkpoint)
        run_on_main(lambda: [_trim_log(out_dir / name, trainer.step_count) for name in (RL_LOG, COMPLETIONS)])
    elif is_main():
        for name in (RL_LOG, COMPLETIONS):
            (out_dir / name).unlink(missing_ok=True)

    rl = config.rl
    tracking = active()  # the run folder's trackers, if it reports to any (rank 0's)
    with tqdm(total=rl.steps, initial=trainer.step_count, desc=rl.algorithm.upper(), unit="step") as bar:
        while trainer.step_count < rl.steps:
            step = trainer.step_count + 1
            anchors, kinds, groups = step_prompts(config, train_anchors, step)
            share = rank_block(len(anchors))  # several processes: each samples its block of the step's rollouts
            anchors, kinds, groups = anchors[share], kinds[share], groups[share]
            prompts = render_prompts(tokenizer, anchors, kinds, config.generator)
            torch.manual_seed(rl.seed + step + RANK_SEED_STRIDE * rank())  # a resumed step samples the same way
            limits = token_limits(tokenizer, anchors, config.generator)
            score = ArtScore(reward, anchors, kinds)
            stats = mean_over_ranks(trainer.step(prompts, groups, score, limits))
            if is_main():
                with log_path.open("a", encoding="utf-8") as fh:
                    append_jsonl(fh, stats)
                tracking.metrics(stats, trainer.step_count, prefix=tracking.job(out_dir))
            bar.update(1)
            bar.set_postfix(progress(stats, [term.name for term in reward.terms]))
            if trainer.step_count % rl.save_every == 0 or trainer.step_count == rl.steps:
                run_on_main(lambda: _save_checkpoint(trainer, config, out_dir))
                if is_main() and rl.log_completions and score.rows:  # rank 0's own rollouts (a skipped batch: none)
                    rows = score.completions(trainer.step_count, rl.log_completions, rl.seed)
                    with (out_dir / COMPLETIONS).open("a", encoding="utf-8") as fh:
                        for row in rows:
                            append_jsonl(fh, row)
                    tracking.table(f"{tracking.job(out_dir)}/completions", rows, trainer.step_count)
    run_on_main(lambda: _finish(out_dir, final))
    if kept is not None:
        run_on_main(lambda: keep_generator(final, kept))
    return final


def report_kept_logs(generator_dir: Path, prefix: str) -> None:
    """A copied tuned generator's RL log and completions to the run's trackers, as if its steps had run here."""
    tracking = active()
    if not tracking:
        return
    for row in read_jsonl(generator_dir / RL_LOG):
        tracking.metrics(row, row["step"], prefix=prefix)
    completions = read_jsonl(generator_dir / COMPLETIONS) if (generator_dir / COMPLETIONS).is_file() else []
    for step in sorted({row["step"] for row in completions}):
        tracking.table(f"{prefix}/completions", [row for row in completions if row["step"] == step], step)


RANK_SEED_STRIDE = 1_000_003  # rank r samples from seed + step + r * stride (rank 0: the one-process stream)


def check_rank_shares(rl: RLConfig) -> None:
    """Several processes share each step's rollouts equally (GRPO: whole groups), or refuse to start."""
    n, unit = rl.batch_size, (rl.group_size if rl.algorithm == "grpo" else 1)
    if (n // unit) % world_size():
        what = f"{n // unit} groups of {unit}" if unit > 1 else f"{n} rollouts"
        raise HardcseError(
            f"rl.batch_size: {n} ({what}) cannot be shared equally by {world_size()} processes; "
            f"give a batch size whose {'groups' if unit > 1 else 'rollouts'} divide by {world_size()}"
        )


def _trim_log(log_path: Path, step_count: int) -> None:
    """Steps logged after the checkpoint are redone; a torn last line (killed mid-write) is dropped."""
    if not log_path.is_file():
        return
    logged, torn = read_jsonl_log(log_path)
    kept = [row for row in logged if row["step"] <= step_count]
    write_text_atomic(log_path, jsonl_text(kept))
    log.info(
        "%s: resuming after step %d (dropped %d line(s) after the checkpoint, %d torn line(s))",
        log_path.name,
        step_count,
        len(logged) - len(kept),
        torn,
    )


def _save_checkpoint(trainer: PolicyTrainer, config: TuneConfig, out_dir: Path) -> None:
    tmp = out_dir / "checkpoint.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    trainer.save(tmp, base_model_source(config.generator.model))
    replace_dir(tmp, out_dir / "checkpoint")


def _finish(out_dir: Path, final: Path) -> None:
    """The curves, then the last checkpoint with its log and curves as the tuned generator ``final``."""
    plot_rl_log(out_dir / RL_LOG, out_dir / RL_CURVES_PNG)
    shutil.rmtree(final, ignore_errors=True)
    shutil.copytree(out_dir / "checkpoint", final)
    for name in (RL_LOG, RL_CURVES_PNG, COMPLETIONS):
        if (out_dir / name).is_file():  # completions.jsonl: absent with rl.log_completions 0
            shutil.copy2(out_dir / name, final / name)


def tune_run(config: TuneConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> Path:
    """``hardcse art tune`` as a run folder: RL works in ``rl/`` (checkpoints; a killed run resumes from the
    last) and the tuned generator lands in ``generator/`` with its RL log and curves. Returns ``generator/``."""
    select_engine(config.engine)  # the encoders' engine (reward, evaluation) follows the config
    from hardcse.resources import check_model_sources
    from hardcse.run_folder import RunFolder

    folder = RunFolder(out, config, resume=resume, overwrite=overwrite, command="art tune")
    folder.check()  # --out mistakes first: resolving the generator may convert it (30 s)
    check_rank_shares(config.rl)
    check_model_sources(
        {"encoder": config.encoder, "discriminator": config.discriminator, "generator.model": config.generator.model}
    )
    with folder as run:
        final = run.stage(
            "generator", "generator", lambda partial: tune_generator(config, run.dir / "rl", partial), all_ranks=True
        )
        run_on_main(lambda: shutil.rmtree(run.dir / "rl", ignore_errors=True))  # its checkpoint is now generator/
        run.finish()
    return final
