"""ART's generator tuning (Section 3.3): RL of the generator against the dual reward, logged and resumable.

PPO (the paper's) or GRPO, by ``rl.algorithm``; the update is :mod:`hardcse.art.rl.loop`. The work folder holds the
RL log (:mod:`hardcse.art.rl.rl_log`) and ``checkpoint/`` (adapter + optimizer state, every ``save_every``
steps); the final adapter with its log and curves goes to ``final_dir`` (a folder ``hardcse art generate`` takes).
Under several processes each rank samples its block of every step's rollouts (from its own random stream) and the
updates average the gradients; rank 0 logs the ranks' mean numbers and writes the checkpoints.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import torch

from hardcse.art.config import TuneConfig
from hardcse.art.generator.model import base_model_source, load_generator
from hardcse.art.generator.prompts import KINDS, render_prompts
from hardcse.art.generator.stopping import token_limits
from hardcse.art.reward.dual import Reward
from hardcse.art.reward.score import ArtScore
from hardcse.art.rl.config import RLConfig
from hardcse.art.rl.loop import RLTrainer
from hardcse.art.rl.rl_log import RLLog
from hardcse.art.rl.rollouts import resolve_rollout_engine, rollout_sampler
from hardcse.art.rl.tuned_cache import continue_tuning, copy_generator, is_cached, keep_generator, tuned_cache_dir
from hardcse.art.synthesis.anchors import anchors_for_step, split_anchors
from hardcse.atomic import replace_dir
from hardcse.discriminator.nli import NLIDiscriminator, load_discriminator
from hardcse.distributed import mean_over_ranks, rank, rank_block, run_on_main, world_size
from hardcse.encoder.build import load_encoder
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.progress import progress_bar
from hardcse.seeding import seeded_torch
from hardcse.tracking.run import Tracking

log = logging.getLogger(__name__)

SAMPLER_FILE = "rollouts.json"  # in a checkpoint: what sampled its steps' rollouts (rl.rollout_engine resolved)
# where rl.rollout_engine: auto resolves to each sampler (rollouts.py resolve_rollout_engine), for a config whose
# engine is auto
RESOLVES_TO = {
    "openvino": "with OpenVINO installed, HARDCSE_ENGINE unset (or openvino) and the generator on the CPU",
    "torch": "with HARDCSE_ENGINE=torch",
}
RANK_SEED_STRIDE = 1_000_003  # rank r samples from seed + step + r * stride (rank 0: the one-process stream)


def tune_generator(
    config: TuneConfig,
    work_dir: str | Path,
    final_dir: str | Path,
    train_anchors: list[str] | None = None,
    discriminator: NLIDiscriminator | None = None,
    engine: Engine | None = None,
    tracking: Tracking | None = None,
) -> Path:
    """Run ``config.rl.steps`` RL steps in ``work_dir`` (continuing from its checkpoint, if any); writes the
    tuned generator to ``final_dir`` and returns it. Step ``t`` reads the ``t``-th slice of ``train_anchors``
    (default: the training part of the anchor split). ``discriminator`` saves loading ``config.discriminator``;
    ``engine``: the command's, where the reward's cosines run (default: ``config.engine`` resolved); ``tracking``:
    the run folder's trackers, which get every step's numbers."""
    work, final = Path(work_dir), Path(final_dir)
    checkpoint = work / "checkpoint"
    work.mkdir(parents=True, exist_ok=True)
    train_anchors = split_anchors(config.anchors).train if train_anchors is None else train_anchors
    rl_log = RLLog(work, tracking or Tracking())

    # where it starts: a kept tuned generator (no RL), a checkpoint (a killed run's or a kept shorter tuning's), or
    # the generator itself
    engine = engine or Engine.resolve(config.engine)
    entry = tuned_cache_dir(config, train_anchors, engine) if config.reuse else None
    if entry is not None and is_cached(entry):  # tuned before on this machine from the same inputs
        log.info("the tuned generator of these inputs was kept in %s: copied, no RL", entry)
        run_on_main(lambda: copy_generator(entry, final))
        rl_log.report_kept(final)
        return final
    check_rank_shares(config.rl)
    resuming = continue_tuning(entry, config, train_anchors, work, rl_log)
    rollouts = resolve_rollout_engine(config.rl.rollout_engine, config.generator, engine)
    log.info("RL's rollouts are sampled by %s (rl.rollout_engine: %s)", rollouts, config.rl.rollout_engine)
    if resuming:  # before any model loads: a refused resume costs nothing
        run_on_main(lambda: check_same_sampler(checkpoint, rollouts, config.rl.rollout_engine))
    discriminator = discriminator or load_discriminator(config.discriminator, config.device)
    encoder = load_encoder(config.encoder, config.pooling, device=config.device)
    reward = Reward(discriminator, encoder, config.reward, engine)
    source = str(checkpoint) if resuming else config.generator.model
    with seeded_torch(config.rl.seed):  # a fresh LoRA adapter's initial weights: the same in every process
        model, tokenizer = load_generator(source, config.generator, trainable=True)
    sampler = rollout_sampler(rollouts, model, tokenizer, config.generator, base_model_source(source))
    reference = reference_adapter(config.rl.reference, model)
    trainer = RLTrainer(model, tokenizer, config.generator, config.rl, sampler, reference)
    if resuming:
        trainer.load_state(checkpoint)
    run_on_main(lambda: rl_log.restart(trainer.step_count if resuming else None))

    train(trainer, reward, config, train_anchors, rl_log, checkpoint, rollouts)
    run_on_main(lambda: rl_log.finish(checkpoint, final))
    if entry is not None:
        run_on_main(lambda: keep_generator(final, entry))
    return final


def train(
    trainer: RLTrainer,
    reward: Reward,
    config: TuneConfig,
    train_anchors: list[str],
    rl_log: RLLog,
    checkpoint: Path,
    rollouts: str,
) -> None:
    """RL steps from the trainer's step count to ``rl.steps``, each logged; a checkpoint every ``save_every``
    (``rollouts``: the resolved ``rl.rollout_engine``, which the checkpoint records)."""
    rl = config.rl
    with progress_bar(total=rl.steps, initial=trainer.step_count, desc=rl.algorithm.upper(), unit="step") as bar:
        while trainer.step_count < rl.steps:
            step = trainer.step_count + 1
            anchors, kinds, groups = step_prompts(rl, train_anchors, step)
            share = rank_block(len(anchors))  # several processes: each samples its block of the step's rollouts
            anchors, kinds, groups = anchors[share], kinds[share], groups[share]
            prompts = render_prompts(trainer.tokenizer, anchors, kinds, config.generator)
            limits = token_limits(trainer.tokenizer, anchors, config.generator)
            score = ArtScore(reward, anchors, kinds)
            with seeded_torch(rl.seed + step + RANK_SEED_STRIDE * rank()):  # a resumed step samples the same way
                stats = mean_over_ranks(trainer.step(prompts, groups, score, limits))
            rl_log.step(stats, trainer.step_count)
            bar.update(1)
            bar.set_postfix(progress(stats, [term.name for term in reward.terms]))
            if trainer.step_count % rl.save_every == 0 or trainer.step_count == rl.steps:
                run_on_main(lambda: save_checkpoint(trainer, config, checkpoint, rollouts))
                if rl.log_completions and score.rows:  # rank 0's own rollouts (a skipped batch: none)
                    rl_log.completions(score.completions(trainer.step_count, rl.log_completions, rl.seed), step)


def step_prompts(rl: RLConfig, train_anchors: list[str], step: int) -> tuple[list[str], list[str], list]:
    """The anchors, kinds and prefix groups of step ``step``'s rollouts: ``batch_size / rows_per_prompt`` anchors,
    positive and negative alternating, each written ``rows_per_prompt`` times (GRPO's group). One row a prompt
    (PPO): rows of a kind share the prompt up to the anchor; a group shares its whole prompt."""
    repeat = rl.rows_per_prompt
    anchors = anchors_for_step(train_anchors, step, rl.anchors_per_step)
    kinds = [KINDS[i % 2] for i in range(len(anchors))]
    if repeat == 1:
        return anchors, kinds, kinds
    return (
        [a for a in anchors for _ in range(repeat)],
        [k for k in kinds for _ in range(repeat)],
        [i for i in range(len(anchors)) for _ in range(repeat)],
    )


def progress(stats: dict, term_names: list[str]) -> dict[str, str]:
    """The progress bar's numbers: the reward, each term's mean over parsed answers and its share, the KL."""
    shown = {"reward": f"{stats['reward']:.3f}"}
    for name in term_names:
        mean, share = stats.get(name), stats.get(f"share_{name}")
        shown[name] = "-" if mean is None else f"{mean:.3f}" + ("" if share is None else f" ({share:.0%})")
    return shown | {"kl": f"{stats.get('kl', float('nan')):.3f}"}


def check_rank_shares(rl: RLConfig) -> None:
    """Several processes share each step's rollouts equally (GRPO: whole groups), or refuse to start."""
    n, unit = rl.batch_size, rl.rows_per_prompt
    if (n // unit) % world_size():
        what = f"{n // unit} groups of {unit}" if unit > 1 else f"{n} rollouts"
        raise HardcseError(
            f"rl.batch_size: {n} ({what}) cannot be shared equally by {world_size()} processes; "
            f"give a batch size whose {'groups' if unit > 1 else 'rollouts'} divide by {world_size()}"
        )


def save_checkpoint(trainer: RLTrainer, config: TuneConfig, checkpoint: Path, rollouts: str) -> None:
    """The trainer's state as ``checkpoint``, with what sampled its rollouts (``rollouts``), replaced whole (a kill
    leaves the old or the new one)."""
    tmp = checkpoint.with_name(checkpoint.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    trainer.save(tmp, base_model_source(config.generator.model))
    (tmp / SAMPLER_FILE).write_text(json.dumps({"rollout_engine": rollouts}) + "\n")
    replace_dir(tmp, checkpoint)


def check_same_sampler(checkpoint: Path, rollouts: str, choice: str) -> None:
    """A resumed tuning samples as its checkpoint's steps did (``rollouts``: ``rl.rollout_engine: choice`` as
    resolved now): ``auto`` follows the engine, OpenVINO's install and the generator's device, any of which may have
    changed since, and a tuning whose sampler changes halfway is neither run's method."""
    recorded = checkpoint / SAMPLER_FILE
    if not recorded.is_file():  # a checkpoint written before the sampler was recorded
        log.warning("%s does not say what sampled its rollouts; resuming with %s", checkpoint, rollouts)
        return
    before = json.loads(recorded.read_text())["rollout_engine"]
    if before == rollouts:
        return
    said = f"{recorded}: this tuning's rollouts were sampled by {before}, but "
    if choice != "auto":  # a library call with another setting (a resumed command keeps its config)
        raise HardcseError(
            f"{said}rl.rollout_engine is {choice} now; resume with rl.rollout_engine: {before}, or start again in a "
            "fresh work folder"
        )
    raise HardcseError(
        f"{said}rl.rollout_engine: auto now resolves to {rollouts} (it follows the engine, OpenVINO's install and "
        f"generator.device); resume {RESOLVES_TO[before]}, or start again in a fresh --out"
    )


def reference_adapter(reference: str, model) -> dict[str, torch.Tensor] | None:  # noqa: ANN001 (a PeftModel)
    """``rl.reference``'s adapter weights as PEFT saves them, checked against the policy's adapter; None for
    "base" and "auto" (auto names the warm start only inside a run: hardcse/art/rl/warm_start.py)."""
    if reference in ("base", "auto"):
        return None
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    path = Path(reference) / "adapter_model.safetensors"
    if not path.is_file():
        raise HardcseError(f"rl.reference: {reference} is not a generator folder (no adapter_model.safetensors)")
    weights = load_file(str(path), device=str(model.device))
    own = get_peft_model_state_dict(model)
    if {k: tuple(v.shape) for k, v in weights.items()} != {k: tuple(v.shape) for k, v in own.items()}:
        raise HardcseError(
            f"rl.reference: {reference}'s adapter is not shaped as the policy's (LoRA r and target modules); give a "
            "generator of the same generator.lora_* settings, or base"
        )
    return {k: v.to(own[k].dtype) for k, v in weights.items()}
