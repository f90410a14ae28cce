"""``hardcse prepare``: the bundled generator made ready once, at install time, instead of in a user's first run.

Two conversions of the bundled SmolLM2 are otherwise the first ART run's to make: the GGUF de-quantised into a
float checkpoint (:func:`hardcse.resources.bundled_generator_dir`) and that checkpoint exported to OpenVINO, which
synthesis and the held-out comparison read for the raw generator (:func:`hardcse.art.generator.openvino.
export_generator`, 8-bit weights not made: ``generator.openvino_weights: int8`` exports on first use). Both go into
the model cache under the keys a run computes, so a run finds them; a second ``prepare`` finds them too and does
nothing. ``make install`` runs it.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prepare",
        help="convert the bundled generator and export it to OpenVINO once (make install does)",
        description="Convert the bundled SmolLM2 GGUF into a float checkpoint and export that to OpenVINO (where "
        "installed), into the model cache ($HARDCSE_CACHE, else ~/.cache/hardcse), so that a first run does not. "
        "Done already: nothing to do.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    import time

    from hardcse.art.config import GeneratorConfig
    from hardcse.engines import openvino_installed
    from hardcse.resources import BUNDLED_GENERATOR, bundled_generator_dir

    start = time.perf_counter()
    print(f"{BUNDLED_GENERATOR} as a float checkpoint: {bundled_generator_dir()}")
    if openvino_installed():
        from hardcse.art.generator.openvino import export_generator

        print(f"{BUNDLED_GENERATOR} in OpenVINO: {export_generator(BUNDLED_GENERATOR, GeneratorConfig())}")
    else:
        print("OpenVINO is not installed: no export (PyTorch runs the generator)")
    print(f"prepared in {time.perf_counter() - start:.0f} s")
