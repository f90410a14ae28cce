"""``hardcse prepare``: the bundled models made ready once, at install time, instead of in a user's first run.

A first ART run would otherwise make two conversions of the bundled SmolLM2: the GGUF de-quantised into a float
checkpoint (:func:`hardcse.resources.bundled_generator_dir`), which every run loads, and that checkpoint exported to
OpenVINO (:func:`hardcse.art.generator.openvino.export_generator`), which synthesis and both sides of the held-out
comparison read (a tuned generator fuses its adapter into it), and ``rl.rollout_engine: openvino``. Both go into
the model cache by the functions a run calls, under the keys a run computes, so a run finds them (never a stale
one: the keys are the cache's own); asked again, it does nothing. The export is made only where runs generate in
OpenVINO (``auto`` on a CPU with OpenVINO installed, not under ``HARDCSE_ENGINE=torch`` nor on a GPU), with float
weights (``generator.openvino_weights: int8`` exports on first use).

It also evaluates the bundled encoder as the quickstart's round 0 does (its tasks, pooling, device and engine), into
the evaluation cache a run reads (:func:`hardcse.art.run.starting_scores`), and trains what the quickstart would
train first (its discriminator and judge where they are ``train``, its warm start where it has one) into the caches
a run copies them from (hardcse/discriminator/kept.py, hardcse/art/rl/warm_start.py): the same functions and
configs, so the same keys. ``--no-training`` leaves those to the first run.

When a run still converts: the keys hold hardcse's code, the libraries' versions and the CPU with torch's thread
count, so after an upgrade, under another ``OMP_NUM_THREADS`` or under a launcher (one thread a process) the first
run converts again. The first ``make demo`` runs it whole; the tests need none of it (they use a model cache of
their own).
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prepare",
        help="convert the bundled generator, export it to OpenVINO, evaluate the bundled encoder and train the "
        "quickstart's NLI models once (make demo does)",
        description="Convert the bundled SmolLM2 GGUF into a float checkpoint and, where runs generate in OpenVINO, "
        "export it, and evaluate the bundled encoder as the quickstart's round 0 does, into the cache "
        "($HARDCSE_CACHE, else ~/.cache/hardcse), so that a first run does not; then train the quickstart's NLI "
        "models and warm start into the caches it copies them from. Done already: nothing to do.",
    )
    p.add_argument(
        "--no-training",
        action="store_true",
        help="convert, export and evaluate only: the quickstart's first run trains its NLI models and warm start",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    import sys
    import time

    from hardcse.art.config import ArtRunConfig, GeneratorConfig
    from hardcse.art.run import starting_scores
    from hardcse.cli.cache import size_line
    from hardcse.config import load_config
    from hardcse.devices import resolve_device
    from hardcse.engines import Engine, openvino_installed
    from hardcse.resources import BUNDLED_GENERATOR, bundled_generator_dir

    start = time.perf_counter()
    demo = load_config(ArtRunConfig, "quickstart")
    engine = Engine.resolve(demo.engine)  # the quickstart's (auto: HARDCSE_ENGINE, else OpenVINO where installed)
    print(f"{BUNDLED_GENERATOR} as a float checkpoint: {bundled_generator_dir()}")
    if engine.on(resolve_device(demo.generator.device, "generator.device")) == "openvino":
        from hardcse.art.generator.openvino import export_generator

        print(f"{BUNDLED_GENERATOR} in OpenVINO: {export_generator(BUNDLED_GENERATOR, GeneratorConfig())}")
    else:
        if engine.choice == "torch":
            reason = f"{engine.key}=torch"
        else:
            reason = "OpenVINO is not installed" if not openvino_installed() else "a GPU is visible"
        print(f"no OpenVINO export (runs here generate in PyTorch: {reason})")
    record = starting_scores(demo, engine)
    done = f"read back from {record['read_from']}" if "read_from" in record else "evaluated"
    print(f"{demo.encoder} {done} as a run's round 0 reads it: avg7 {record['avg7']:.2f}")
    if not args.no_training:
        for line in _train_what_the_quickstart_trains(demo):
            print(line)
    print(f"{size_line()} (to bound it: `hardcse cache prune --help`)")
    print(f"prepared in {time.perf_counter() - start:.0f} s", file=sys.stderr)


def _train_what_the_quickstart_trains(demo) -> list[str]:  # noqa: ANN001 (an ArtRunConfig; imported lazily)
    """The quickstart's NLI models and warm start, each trained into its cache (or found there), in a temporary
    folder that is then removed: the run copies them from the cache. A line for each."""
    import tempfile
    from pathlib import Path

    from hardcse.art.config import TRAIN_IN_RUN
    from hardcse.art.rl.warm_start import warm_start_entry, warm_started
    from hardcse.discriminator.kept import train_or_copy

    lines = []
    with tempfile.TemporaryDirectory(prefix="hardcse-prepare-") as work:
        for role in ("discriminator", "judge"):
            if getattr(demo, role) == TRAIN_IN_RUN:
                entry = train_or_copy(getattr(demo, f"{role}_training"), Path(work) / role)
                lines.append(f"the quickstart's {role}: {entry}")
        if demo.warm_start.enabled:
            warm_started(demo.warm_start, demo.generator, demo.decontamination, Path(work) / "warm_start")
            entry = warm_start_entry(demo.warm_start, demo.generator, demo.decontamination)[0]
            lines.append(f"the quickstart's warm start: {entry}")
    return lines
