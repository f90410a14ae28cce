"""The warm-start records' page text: the NLI models' accuracy table (warm_start.py, warm_assay.py) and the warm
assay's page (warm_assay.py), apart from the scripts that run them."""

from __future__ import annotations

from lib.record import interval_cell, number_cell, signed_interval


def nli_table(nli: dict) -> list[str]:
    """The NLI models' accuracy (``nli_accuracy``'s, per model) as a table, one row a model."""
    sets = next(iter(nli.values()))
    return [
        "| model | " + " | ".join(sets) + " |",
        "|---|" + "---:|" * len(sets),
        *(f"| {name} | " + " | ".join(f"{v['accuracy']:.2f}" for v in r.values()) + " |" for name, r in nli.items()),
    ]


def penalties(p: dict) -> str:
    return ", ".join(f"{t['fn'].rsplit(':', 1)[1]} {t['weight']:+g}" for t in p["reward_penalties"])


def page(p: dict) -> list[str]:
    w = p["warm_start"]["config"]
    with_cover = all("negative_cover" in r for r in p["sides"].values())
    by_long = "warm_long_strong" in p["sides"]  # the strong filter described with it, else on its own
    strong_filter = "filtered as warm_long_strong" if by_long else "under the strong filter"
    lines = [
        f"Warm start: {w['steps']} steps of {w['batch_size']} NLI pairs, base weights in {w['dtype']}, "
        f"drop_shortcuts {w.get('drop_shortcuts', False)}"
        + (
            f". ART: cpu-full's PPO ({p['rl_steps']} steps) from it, RL seed {p['rl_seed']}, the KL's reference the "
            "warm start"
            + (f", with the reward terms {penalties(p)} beside the dual reward" if p.get("reward_penalties") else "")
            if "art" in p["sides"]
            else ""
        )
        + (
            f". warm_edit: the same warm start, its contradictions only those sharing at least "
            f"{e['config']['negative_min_cover']:g} of their content words with their premise "
            # "unrelated": the count's name in the first record of a warm_edit side (warm_assay_edit)
            f"({e['pairs'].get('negative_cover', e['pairs'].get('unrelated'))} left out)"
            + (
                f", its entailments only those sharing at least {pc:g} ({e['pairs']['positive_cover']} left out)"
                if (pc := e["config"].get("positive_min_cover"))
                else ""
            )
            + f", loss {e['loss_first']:.3f} -> {e['loss_last']:.3f}"
            if (e := p.get("edit_warm_start"))
            else ""
        )
        + (
            f". warm_long: the same warm start for {g['config']['steps']} steps ({g['pairs']['used']} pairs), "
            f"loss {g['loss_first']:.3f} -> {g['loss_last']:.3f}"
            if (g := p.get("long_warm_start"))
            else ""
        )
        + (
            (". warm_long_strong: warm_long's generator, its filter" if by_long else ". The strong filter:")
            + " the strong discriminator (the discriminator's share trained with the judge's recipe) under the "
            f"threshold rule, P(entailment) >= {f['min_entailment']:g} and P(contradiction) >= "
            f"{f['min_contradiction']:g}"
            if (f := p.get("strong_filter"))
            else ""
        )
        + (
            ". warm_long_strong_argmax: the same discriminator under the paper's argmax rule"
            if "warm_long_strong_argmax" in p["sides"]
            else ""
        )
        + (
            f". art_strong: warm_long's generator tuned by cpu-full's PPO ({p['rl_steps']} steps, RL seed "
            f"{p['rl_seed']}, the KL's reference warm_long) against the strong discriminator's dual reward"
            + (f" with the reward terms {penalties(p)}" if p.get("reward_penalties") else "")
            + f", {strong_filter}"
            if "art_strong" in p["sides"]
            else ""
        )
        + (f". warm_strong: the warm start's generator, {strong_filter}" if "warm_strong" in p["sides"] else "")
        + (
            f". art_warm_strong: the warm start's generator tuned by cpu-full's PPO ({p['rl_steps']} steps, RL seed "
            f"{p['rl_seed']}) against the strong discriminator's dual reward, {strong_filter} (cpu-full-warm's "
            "first round)"
            if "art_warm_strong" in p["sides"]
            else ""
        )
        + f". Generated sides: best of {p['candidates']}"
        + (f", sampling seed {p['sample_seed']}" if p.get("sample_seed", p["rl_seed"]) != p["rl_seed"] else "")
        + (", their filter rejecting deletion positives and added negations" if p.get("reject_shortcuts") else "")
        + ". "
        "Each side wrote for the "
        f"training corpus' anchors in order until it had {p['rows_asked']} kept triplets (or the anchors ran out); "
        f"the assay trains on the first {p['rows']} of each, training seeds "
        f"{', '.join(map(str, p['train_seeds']))}. Synthetic accuracy by the judge over the side's anchors.",
        "",
        "| side | anchors | kept | kept fraction | kept a minute | accuracy positive | accuracy negative | "
        "accuracy avg | false negatives | deletion positives | added negation |"
        + (" negative's anchor cover |" if with_cover else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if with_cover else ""),
    ]

    for side, r in p["sides"].items():
        fn = r["false_negatives"]
        s = r["shortcuts"]
        lines.append(
            f"| {side} | {r['anchors']} | {r['kept']} | {interval_cell(r['kept_fraction'])} | {r['kept_per_minute']} | "
            f"{interval_cell(r['synthetic_accuracy_positive'])} | {interval_cell(r['synthetic_accuracy_negative'])} | "
            f"{interval_cell(r['synthetic_accuracy'])} | {fn.get('entailed', '-')} of {fn['kept']} | "
            f"{number_cell(s['positive_deletion_rate'])} | {number_cell(s['negative_added_negation_rate'])} |"
            + (f" {number_cell(r['negative_cover'])} |" if with_cover else "")
        )
    for name, e in p.get("judged_pairs", {"art - warm": p["rl_effect"]} if "rl_effect" in p else {}).items():
        what, runs = (
            ("RL's own effect, art - warm", "one warm start, one RL seed")
            if name == "art - warm"
            else (name, "one warm start a side")
        )
        accuracy = {part: signed_interval(e[f"synthetic_accuracy{part}"]) for part in ("", "_positive", "_negative")}
        lines += ["", f"{what} over the {e['anchors']} anchors both wrote for (paired bootstrap "
                  f"95% over anchors; {runs}): synthetic accuracy {accuracy['']}, positive {accuracy['_positive']}, "
                  f"negative {accuracy['_negative']}; kept fraction {signed_interval(e['kept'])}."]  # fmt: skip
    if "nli" in p:
        lines += ["", "The NLI models' accuracy:", "", *nli_table(p["nli"])]
    return [*lines, "", "The assay (B - A: paired bootstrap 95% over test pairs and training seeds):", "",
            p["assay_table"], ""]  # fmt: skip
