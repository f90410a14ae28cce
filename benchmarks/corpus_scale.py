"""Anchors of a cpu-full ART run drawn from a 1M-sentence corpus: time and peak memory.

    python benchmarks/corpus_scale.py [--sentences 1000000] [--out runs/corpus-1m]

Makes the corpus by repeating and perturbing the vendored Wikipedia sentences (copy k of a sentence gets the
words "in variant k" after its first word, so every line is distinct; length kept within the anchor filter's
range for most), writes it as OUT/corpus.txt and OUT/corpus.parquet, then, each in a fresh process, draws the
anchors of configs/cpu-full.yaml from it: with `anchors.max_anchors` set to what the run needs (rounds x
(synthesis + RL anchors) + held out: the streamed bottom-N sample) and with `max_anchors: null` (every usable
sentence kept, as before this option). Records seconds and the peak resident memory the draw adds to the
process (sampled every 5 ms from /proc/self/statm, over the memory after hardcse's imports) in
benchmarks/results/corpus_scale.{json,md}.
Wall-clock: run it alone on the machine.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DRAW = """
import json, os, sys, threading, time
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.art.config import AnchorConfig
def rss(): return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
before, peak, done = rss(), [0.0], threading.Event()
def watch():  # resident memory sampled every 5 ms while the anchors are drawn
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.005)
watcher = threading.Thread(target=watch)
watcher.start()
start = time.perf_counter()
split = split_anchors(AnchorConfig(**json.loads(sys.argv[1])))
seconds = time.perf_counter() - start
done.set()
watcher.join()
out = {"seconds": round(seconds, 2), "train": len(split.train), "held_out": len(split.held_out)}
print(json.dumps(out | {"imports_mib": round(before), "added_mib": round(max(peak[0], rss()) - before)}))
"""


def make_corpus(n: int, out: Path) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hardcse.data.corpus import read_sentences

    base = read_sentences()
    lines = []
    for k in range(n):
        words = base[k % len(base)].split()
        copy = k // len(base)
        lines.append(" ".join(words[:1] + ["in", "variant", str(copy)] + words[1:]) if copy else " ".join(words))
    txt, parquet = out / "corpus.txt", out / "corpus.parquet"
    txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"text": lines}), parquet, row_group_size=50_000)
    return txt, parquet


def draw(anchors: dict) -> dict:
    result = subprocess.run([sys.executable, "-c", DRAW, json.dumps(anchors)], capture_output=True, text=True)
    if result.returncode:
        sys.exit(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--out", default="runs/corpus-1m")
    args = parser.parse_args()
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from lib.record import write_record

    config = load_config(ArtRunConfig, "configs/cpu-full.yaml")
    per_round = config.synthesis_anchors + config.rl.steps * config.rl.anchors_per_step
    need = config.rounds * per_round + config.anchors.held_out
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    txt, parquet = make_corpus(args.sentences, out)
    made = time.perf_counter() - start
    anchors = {k: getattr(config.anchors, k) for k in ("min_words", "max_words", "held_out", "seed")}
    rows = []
    for corpus, max_anchors in ((txt, need), (parquet, need), (txt, None)):
        measured = draw({**anchors, "corpus": str(corpus), "max_anchors": max_anchors})
        rows.append({"corpus": corpus.name, "max_anchors": max_anchors, **measured})
        print(rows[-1], flush=True)
    lines = [
        "| corpus | anchors.max_anchors | anchors drawn | seconds | peak memory added by the draw (MiB) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['corpus']} | {r['max_anchors'] or 'null (all)'} | {r['train'] + r['held_out']:,} | "
            f"{r['seconds']:.1f} | {r['added_mib']:,} |"
            for r in rows
        ),
        "",
        f"The process holds {rows[0]['imports_mib']:,} MiB after importing hardcse (torch, transformers) before any "
        "draw; the added peak is resident memory sampled every 5 ms during the draw, minus that.",
        "",
    ]
    text = write_record(
        "corpus_scale",
        f"Anchors from a {args.sentences:,}-sentence corpus",
        lines,
        {"need": need, "rows": rows},
        about=f" ({txt.stat().st_size / 2**20:.0f} MiB text, made in {made:.0f} s; configs/cpu-full.yaml needs "
        f"{need:,} anchors: {config.rounds} rounds x ({config.synthesis_anchors} synthesis + "
        f"{config.rl.steps * config.rl.anchors_per_step} RL) + {config.anchors.held_out} held out)",
    )
    print(text)


if __name__ == "__main__":
    main()
