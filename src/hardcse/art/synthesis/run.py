"""ART's synthesis as a run folder: ``hardcse art generate`` and ``hardcse.generate_triplets`` both call
:func:`synthesis_run`, so the two write the same files for the same config and sentences."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from hardcse.art.config import ArtRunConfig, GeneratorConfig, TuneConfig
from hardcse.errors import HardcseError

HELD_OUT = "held-out"  # the anchor split kept from tuning
WIKI_LICENCE = "CC BY-SA 4.0 (Wikipedia sentences, data/PROVENANCE.md)"


def synthesis_run(
    config: TuneConfig,
    out: str | Path,
    *,
    generator: str | None = None,
    anchors: str | Sequence[str] = HELD_OUT,
    limit: int | None = None,
    on_error: str = "raise",
    resume: bool = False,
    overwrite: bool = False,
    command_line: str | None = None,
    licence: str | None = None,
) -> dict:
    """``generator`` (default ``config.generator.model``) writes for ``anchors`` ("held-out": the anchor split kept
    from tuning; a sentence file; or the sentences themselves, a list) their first ``limit``, into the run folder
    ``out``; returns the synthesis report. The inputs that are not config are recorded in the manifest (a list by
    its count and digest), and a resumed run must keep them. ``command_line`` (what the user ran) and ``licence`` (of
    the sentences) go to the dataset card (hardcse/data/triplet_dataset.py)."""
    from hardcse.art.reward.dual import Reward
    from hardcse.art.reward.terms import check_terms, config_terms
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.data.corpus import read_sentences
    from hardcse.data.jsonl import read_json_mapping
    from hardcse.discriminator.nli import load_discriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine
    from hardcse.resources import check_model_sources
    from hardcse.run_folder import RunFolder

    engine = Engine.resolve(config.engine)  # the generator and the reward's cosines run in it
    if isinstance(anchors, str):
        named = anchors
        held_out = anchors == HELD_OUT
        texts = split_anchors(config.anchors).held_out if held_out else read_sentences(anchors, on_error=on_error)
    else:
        texts = check_sentences(anchors)
        named = f"{len(texts)} sentences, sha256 {hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]}"
    if limit is not None and limit < 1:
        raise HardcseError(f"--limit {limit}: give a number of anchors of at least 1 (or leave it out for all)")
    texts = texts[:limit] if limit else texts
    if not texts:
        raise HardcseError(f"anchors {named!r}: no anchor sentences to write for")
    source = generator or config.generator.model
    folder = RunFolder(out, config, resume=resume, overwrite=overwrite, command="art generate", engine=engine)
    folder.check()  # --out mistakes first: resolving the generator may convert it (30 s)
    inputs = {"generator": source, "anchors": named, "limit": limit, "n_anchors": len(texts)}
    manifest = Path(out) / "manifest.json"
    recorded = read_json_mapping(manifest).get("inputs") if resume and manifest.is_file() else None
    if recorded is not None and recorded != inputs:  # as a changed config is refused
        changed = [f"{k} ({recorded.get(k)!r} -> {v!r})" for k, v in inputs.items() if recorded.get(k) != v]
        raise HardcseError(
            f"{out}: the inputs differ from the run's in {', '.join(changed)}; a resumed run keeps its inputs "
            "(start a new folder to change them)"
        )
    check_model_sources({"encoder": config.encoder, "discriminator": config.discriminator, "generator": source})
    check_terms(config_terms(config.reward.terms), texts)
    corpus = config.anchors.corpus if anchors == HELD_OUT else anchors
    command = command_line or f"hardcse art generate --out {out}"
    card = dataset_card(config.discriminator, config.encoder, command, named, licence or corpus_licence(corpus))
    with folder as run:
        run.record("inputs", inputs)

        def build(_: Path) -> None:
            discriminator = load_discriminator(config.discriminator, config.device)
            encoder = load_encoder(config.encoder, device=config.device)
            reward = Reward(discriminator, encoder, config.reward, engine)
            synthesize(
                source,
                texts,
                config.generator,
                reward,
                config.filter,
                run.dir,
                decontamination=config.decontamination,
                engine=engine,
                cache_generations=config.reuse,
                card=card,
            )

        done = run.stage("synthesis", "synthesis.json", build, in_place=True, all_ranks=True)
        run.finish()
    return json.loads(done.read_text(encoding="utf-8"))


def synthesis_generation(config: ArtRunConfig) -> GeneratorConfig:
    """The generator's settings as a run's synthesis samples: ``synthesis_temperature`` where the config sets one."""
    if config.synthesis_temperature is None:
        return config.generator
    return dataclasses.replace(config.generator, sampling_temperature=config.synthesis_temperature)


def dataset_card(discriminator: str, encoder: str, command: str, sentences: str, licence: str) -> dict[str, str]:
    """What a caller of synthesis adds to the dataset card (hardcse/data/triplet_dataset.py)."""
    return {
        "discriminator": discriminator,
        "encoder (difficulty)": encoder,
        "command": command,
        "sentences": sentences,
        "licence": licence,
    }


def corpus_licence(corpus: object) -> str:
    """The dataset card's licence of anchors from ``corpus``: the bundled Wikipedia sample's (None) or unknown."""
    return WIKI_LICENCE if corpus is None else "unknown: the licence of the sentences given"


def check_sentences(sentences: Sequence[str]) -> list[str]:
    """A list of sentences given in Python, checked as a file's rows are: each a non-empty string."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        what = "one string" if isinstance(sentences, str) else type(sentences).__name__
        raise HardcseError(f"sentences: give a list of sentences, not {what}")
    texts = list(sentences)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise HardcseError(f"sentences[{i}]: {type(text).__name__}, not a string; give sentences as text")
        if not text.strip():
            raise HardcseError(f"sentences[{i}]: an empty sentence; leave it out")
    return texts
