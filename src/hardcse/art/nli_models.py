"""An ART run's two NLI models: the reward's discriminator (it scores and filters) and the judge (it grades the
synthetic data, Table 4). Each is a folder the config names, or ``train`` (TRAIN_IN_RUN): trained in the run on
its ``*_training`` pairs into the run folder, copied from the machine's cache where these inputs trained one before
(hardcse/discriminator/kept.py) unless ``keep_discriminator`` is off."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from hardcse.art.config import TRAIN_IN_RUN, ArtRunConfig
from hardcse.discriminator.kept import train_or_copy
from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs, train_nli

if TYPE_CHECKING:
    from hardcse.run_folder import RunFolder

log = logging.getLogger(__name__)

NLI_MODELS = ("discriminator", "judge")  # the config's keys; each trains on ``KEY_training``


def check_nli_models(config: ArtRunConfig) -> dict[str, str]:
    """Reads the NLI files of each model the run trains (a bad file fails before any model loads) and warns when
    the judge would train on the discriminator's pairs; returns the given models' sources by key, to be checked."""
    sources = {}
    for key in NLI_MODELS:
        if getattr(config, key) != TRAIN_IN_RUN:
            sources[key] = getattr(config, key)
        else:
            nli_training_pairs(getattr(config, f"{key}_training"))
    if config.judge == TRAIN_IN_RUN and config.discriminator == TRAIN_IN_RUN:
        shares = config.discriminator_training.share, config.judge_training.share
        if None in shares or shares[0] == shares[1]:
            log.warning(
                "judge: the run's judge and discriminator train on shared NLI pairs (shares %s and %s); give them "
                "discriminator_training.share: discriminator and judge_training.share: judge for a judge that "
                "never saw the reward's pairs",
                *shares,
            )
    return sources


def nli_stage(folder: RunFolder, name: str, training: NLITrainConfig, keep: bool) -> str:
    """The run's NLI model ``name`` trained into its folder (or, with ``keep``: ``keep_discriminator``, copied, as
    the module doc says); returns the folder."""
    train = train_or_copy if keep else train_nli
    folder.stage(
        name,
        name,
        lambda partial: train(training, partial, tracking=folder.tracking),
        keep_partial=True,
        all_ranks=True,
    )
    return str(folder.dir / name)


def nli_models_stage(folder: RunFolder, config: ArtRunConfig) -> tuple[str, ArtRunConfig]:
    """The discriminator's source, and ``config`` with the run's judge folder as ``judge`` where the run trains it
    (the stages read the judge from its folder)."""
    discriminator = config.discriminator
    if discriminator == TRAIN_IN_RUN:
        discriminator = nli_stage(folder, "discriminator", config.discriminator_training, config.keep_discriminator)
    if config.judge == TRAIN_IN_RUN:
        judge = nli_stage(folder, "judge", config.judge_training, config.keep_discriminator)
        config = dataclasses.replace(config, judge=judge)
    return discriminator, config
