"""STS-B dev of trained DiffAug models encoded through each prefix alone and through both (the method's default).

    python benchmarks/diffaug_inference_views.py runs/diffaug/semi/model runs/diffaug/sup/model

Writes benchmarks/results/diffaug_inference_views.md. Only STS-B dev is measured: it is a model-selection question.
"""

import argparse
from pathlib import Path

from hardcse.diffaug.prefix import VIEW_KEY, PrefixedTransformer
from hardcse.encoder.build import load_encoder
from hardcse.evaluation.sts import evaluate_sts

RESULTS = Path(__file__).parent / "results"
VIEWS = {"both prefixes (default)": None, "prefix 1 only": 0, "prefix 2 only": 1}


def dev_score(model_dir: str, view: int | None) -> float:
    model = load_encoder(model_dir)
    transformer = model[0]
    if not isinstance(transformer, PrefixedTransformer):
        raise SystemExit(f"{model_dir} has no prefixes")

    def forward(features: dict, **kwargs: object) -> dict:
        return PrefixedTransformer.forward(transformer, {VIEW_KEY: view, **features}, **kwargs)

    transformer.forward = forward  # encode() passes no view: this one is used instead of both
    return evaluate_sts(model, ["STS-B-dev"], show_progress=False).scores["STS-B-dev"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    lines = [
        "# DiffAug: STS-B dev by inference view",
        "",
        f"`python benchmarks/diffaug_inference_views.py {' '.join(args.models)}`",
        "",
        "| model | " + " | ".join(VIEWS) + " |",
        "|---|" + "---:|" * len(VIEWS),
    ]
    for model_dir in args.models:
        scores = [f"{dev_score(model_dir, view):.2f}" for view in VIEWS.values()]
        lines.append(f"| {model_dir} | " + " | ".join(scores) + " |")
    (RESULTS / "diffaug_inference_views.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
