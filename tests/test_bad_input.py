"""The bad-input suite: every user mistake is one line `error: ...`, exit status 2, no traceback, nothing written.

Each case is a command line (``{tmp}`` stands for a folder of bad files made below) and a piece of the expected
message. Every case fails before any model is loaded, so the whole suite takes seconds.
"""

import json
from pathlib import Path

import pytest

from hardcse.cli import main

REPO = Path(__file__).resolve().parents[1]
SMOKE = "configs/smoke.yaml"
ART = ["art", "run", "--config", SMOKE, "--out", "{tmp}/out"]
SIMCSE = [
    "simcse",
    "train",
    "--config",
    "configs/simcse-sup.yaml",
    "--data",
    "{tmp}/triplets.csv",
    "--out",
    "{tmp}/out",
]
DATACUBE = ["datacube", "train", "--config", "configs/datacube-smoke.yaml", "--out", "{tmp}/out"]
DIFFAUG = ["diffaug", "train", "--config", "configs/diffaug-smoke.yaml", "--out", "{tmp}/out"]
NLI = ["nli", "train", "--config", "configs/nli-discriminator.yaml", "--out", "{tmp}/out"]
EVAL = ["eval", "--model", "bundled:minilm-l6", "--pairs"]
GENERATE = ["art", "generate", "--config", "tune-cpu", "--out"]


def bad_files(tmp):
    """Every bad file the cases name, and a few good ones they need."""
    files = {
        "triplets.csv": "sent0,sent1,hard_neg\nA man plays.,A man is playing.,Nobody plays.\n",
        "header_only.tsv": "sentence1\tsentence2\tscore\n",
        "one_row.tsv": "sentence1\tsentence2\tscore\nA.\tB.\t3\n",
        "constant.tsv": "sentence1\tsentence2\tscore\nA.\tB.\t3\nC.\tD.\t3\nE.\tF.\t3\n",
        "nan.tsv": "sentence1\tsentence2\tscore\nA.\tB.\t3\nC.\tD.\tnan\nE.\tF.\t1\n",
        "inf.tsv": "sentence1\tsentence2\tscore\nA.\tB.\t3\nC.\tD.\tinf\nE.\tF.\t1\n",
        "empty.tsv": "",
        "empty.txt": "\n\n",
        "header_only.csv": "sent0,sent1,hard_neg\n",
        "good.jsonl": '{"anchor": "A.", "positive": "B.", "negative": "C."}\n',
        "no_score.tsv": "sentence1\tsentence2\tlabel\nA.\tB.\t3\nC.\tD.\t1\n",
        "unclosed.csv": 'sentence1,sentence2,score\n"A man plays.,A man is playing.,5\nC.,D.,1\n',
        "fields.tsv": "sentence1\tsentence2\tscore\nA.\tB.\t3\textra\n",
        "sheet.xlsx": "not a sheet",
        "broken.jsonl": '{"anchor": "A."}\n{"anchor": \n',
        "list.yaml": "- a\n- b\n",
        "invalid.yaml": "encoder: [unclosed\n",
        "base_number.yaml": "base: 3\n",
        "base_list.yaml": "base: [a.yaml]\n",
        "base_missing.yaml": "base: nowhere.yaml\n",
        "base_self.yaml": "base: base_self.yaml\n",
        "renamed.yaml": f"base: {REPO / 'configs' / 'diffaug-smoke.yaml'}\ntemperature: 0.05\n",
        "a_file": "not a folder",
        "bad_value.yaml": f"base: {REPO / 'configs' / 'smoke.yaml'}\nrl:\n  steps: -3\n",
    }
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    (tmp / "latin1.tsv").write_bytes("sentence1\tsentence2\tscore\nCaf\xe9.\tB.\t3\n".encode("latin-1"))
    (tmp / "latin1.yaml").write_bytes("encoder: caf\xe9\n".encode("latin-1"))
    (tmp / "corrupt_model").mkdir()
    (tmp / "corrupt_model" / "config.json").write_text("{not json")
    (tmp / "empty_dir").mkdir()
    (tmp / "junk_dir").mkdir()
    (tmp / "junk_dir" / "notes.txt").write_text("no model here")
    (tmp / "unfinished_run").mkdir()
    (tmp / "unfinished_run" / "manifest.json").write_text("{}")
    (tmp / "runs").mkdir()
    (tmp / "finished").mkdir()
    (tmp / "finished" / "config.yaml").write_text("encoder: bundled:minilm-l6\n")
    (tmp / "finished" / "manifest.json").write_text(json.dumps({"stages": {}}))
    for folder, command, config in [
        ("diffaug_run", "diffaug train", "encoder: bundled:minilm-l6\n"),
        ("art_run", "art run", (REPO / SMOKE).read_text()),
        ("empty_config_run", "art run", ""),
    ]:
        (tmp / folder).mkdir()
        (tmp / folder / "config.yaml").write_text(config)
        (tmp / folder / "manifest.json").write_text(json.dumps({"command": command, "stages": {}}))
    (tmp / "pairs.csv").write_text("sent0,sent1\nA man plays.,A man is playing.\n")
    for folder, manifest, extra in [
        ("corrupt_manifest", "{not json", {}),
        ("corrupt_eval", json.dumps({"command": "eval"}), {"eval.json": "{not json"}),
    ]:
        (tmp / folder).mkdir()
        (tmp / folder / "config.yaml").write_text((REPO / SMOKE).read_text())
        (tmp / folder / "manifest.json").write_text(manifest)
        for name, text in extra.items():
            (tmp / folder / name).write_text(text)
    record = {"anchor": "A man plays.", "positive": "A man is playing.", "negative": "Nobody plays."}
    record |= {"positive_cosine": 0.9, "negative_cosine": 0.5, "positive_reward": 0.1, "negative_reward": 0.2}
    (tmp / "synthetic.jsonl").write_text(json.dumps(record | {"drop_reason": None}) + "\n")
    (tmp / "blank.jsonl").write_text("\n")
    (tmp / "nli_header.tsv").write_text("premise\thypothesis\tlabel\n")
    (tmp / "anchors.txt").write_text("A man plays a guitar on the street.\nTwo dogs run across a green field.\n")
    from hardcse.art.config import TuneConfig
    from hardcse.config import load_config, save_config

    (tmp / "generated").mkdir()  # an `art generate` folder made for the held-out anchors
    save_config(load_config(TuneConfig, REPO / "configs" / "tune-cpu.yaml"), tmp / "generated" / "config.yaml")
    inputs = {"generator": "bundled:smollm2-135m", "anchors": "held-out", "limit": None, "n_anchors": 300}
    (tmp / "generated" / "manifest.json").write_text(json.dumps({"command": "art generate", "inputs": inputs}))
    for folder, instructions, files in [
        ("tasks_not_text", "t1: {query: 3, positive: p, negative: n}\n", ["t1"]),
        ("tasks_unlisted", "t1: {query: q, positive: p, negative: n}\n", ["t1", "t2"]),
    ]:
        (tmp / folder).mkdir()
        (tmp / folder / "instructions.yaml").write_text(instructions)
        for name in files:
            (tmp / folder / f"{name}.jsonl").write_text('{"query": "a q", "pos": "a p", "neg": "a n"}\n')


CASES = {
    # overrides
    "override not YAML": ([*ART, "rl.learning_rate=[1"], "not valid YAML"),
    "override NaN rate": (
        [*ART, "rl.learning_rate=.nan"],
        "error: override rl.learning_rate=.nan: nan must be a finite",
    ),
    "override inf rate": ([*SIMCSE, "training.learning_rate=.inf"], "must be a finite number greater than 0"),
    "override negative rate": ([*DIFFAUG, "training.learning_rate=-1e-5"], "greater than 0"),
    "override zero batch": (
        [*ART, "encoder_training.training.batch_size=0"],
        "override encoder_training.training.batch_size=0: 0 must be",
    ),
    "override negative steps": ([*ART, "rl.steps=-1"], "error: override rl.steps=-1: -1 must be"),
    "override bad algorithm": ([*ART, "rl.algorithm=dpo"], "error: override rl.algorithm=dpo: 'dpo' is not one of"),
    "override zero temperature": (
        [*ART, "generator.sampling_temperature=0"],
        "override generator.sampling_temperature=0: 0.0 must",
    ),
    "override zero tau": ([*DATACUBE, "tau=0"], "override tau=0: 0.0 must be"),
    "override NaN max steps": ([*DATACUBE, "training.max_steps=.nan"], "expected int"),
    "override unknown key": ([*ART, "nope=1"], "error: override nope=1: unknown key(s) ['nope']"),
    "override renamed key": ([*DIFFAUG, "temperature=0.05"], "this key is now tau"),
    "override wrong type": ([*ART, "rounds=two"], "error: override rounds=two: expected int, got 'two'"),
    "override empty key": ([*ART, "=3"], "write key=value"),
    "override into a value": ([*ART, "rounds.x=1"], "rounds is not a block of keys"),
    "override bad choice": ([*DATACUBE, "task_order=greedy"], "'greedy' is not one of"),
    "override negative seed": ([*ART, "rl.seed=-1"], "override rl.seed=-1: -1: a seed is an integer from 0 to 4294"),
    "override seed too large": ([*SIMCSE, "training.seed=4294967296"], "training.seed=4294967296: 4294967296: a seed"),
    "assay negative seed": (
        ["assay", "--data", "{tmp}/triplets.csv", "{tmp}/triplets.csv", "--seeds", "-1", "--out", "{tmp}/out"],
        "override seeds=[-1]: -1: a seed is an integer from 0 to 4294967295",
    ),
    "override bad device": (
        [*ART, "generator.device=gpu"],
        "override generator.device=gpu: 'gpu': give auto, cpu, cuda or cuda:N",
    ),
    "device absent": ([*ART, "generator.device=cuda:99"], "generator.device: cuda:99: "),  # no GPU, or not 100
    "training device not first": ([*SIMCSE, "training.device=cuda:1"], "CUDA_VISIBLE_DEVICES=1 and device: cuda"),
    "nested device absent": (
        [*ART, "encoder_training.training.device=cuda:99"],
        "override encoder_training.training.device=cuda:99: cuda:99",
    ),
    # config files
    "config missing": ([*ART[:3], "{tmp}/nope.yaml", *ART[4:]], "no such config file; the shipped configs are"),
    "config is a folder": ([*ART[:3], "{tmp}/empty_dir", *ART[4:]], "a config must be a YAML file, not a folder"),
    "config not UTF-8": ([*ART[:3], "{tmp}/latin1.yaml", *ART[4:]], "not UTF-8 text (byte 0xe9)"),
    "config not YAML": ([*ART[:3], "{tmp}/invalid.yaml", *ART[4:]], "not valid YAML"),
    "config a list": ([*ART[:3], "{tmp}/list.yaml", *ART[4:]], "the top level must be a mapping"),
    "config base number": ([*ART[:3], "{tmp}/base_number.yaml", *ART[4:]], "base: 3 must be the path"),
    "config base list": ([*ART[:3], "{tmp}/base_list.yaml", *ART[4:]], "must be the path of another config"),
    "config base missing": ([*ART[:3], "{tmp}/base_missing.yaml", *ART[4:]], "base: nowhere.yaml: no such config"),
    "config base cycle": ([*ART[:3], "{tmp}/base_self.yaml", *ART[4:]], "`base` files form a cycle"),
    "config renamed key": (
        [*DIFFAUG[:3], "{tmp}/renamed.yaml", *DIFFAUG[4:]],
        "error: {tmp}/renamed.yaml: temperature: this key is now tau",
    ),
    "config bad value": (
        [*ART[:3], "{tmp}/bad_value.yaml", *ART[4:]],
        "error: {tmp}/bad_value.yaml: rl.steps: -3 must",
    ),
    "no config": (["art", "run", "--out", "{tmp}/out"], "give --config FILE"),
    # output folders and run folders
    "out is a file": ([*ART[:5], "{tmp}/a_file"], "--out {tmp}/a_file: this is a file"),
    "out inside a file": ([*ART[:5], "{tmp}/a_file/run"], "a_file is a file, so no folder can be made"),
    "out finished": ([*ART[:5], "{tmp}/finished"], "exists and is not empty; pass --resume"),
    "resume nothing": (["art", "run", "--out", "{tmp}/out", "--resume"], "not a run folder (no config.yaml)"),
    "resume and overwrite": ([*ART, "--resume", "--overwrite"], "--resume and --overwrite contradict"),
    "resume changed config": ([*ART[:5], "{tmp}/finished", "--resume"], "the configuration differs"),
    "overwrite a non-run": ([*ART[:5], "{tmp}/junk_dir", "--overwrite"], "is not a hardcse output"),
    "resume another command's folder": (
        ["assay", "--resume", "--out", "{tmp}/art_run"],
        "{tmp}/art_run is a `hardcse art run` folder, not a `hardcse assay` one; resume it with `hardcse art run",
    ),
    "resume another command's folder with a config": (
        [*SIMCSE, "--resume", "--out", "{tmp}/diffaug_run"],
        "is a `hardcse diffaug train` folder, not a `hardcse simcse train` one",
    ),
    "report another command's folder": (
        ["art", "report", "{tmp}/diffaug_run"],
        "{tmp}/diffaug_run is a `hardcse diffaug train` folder, not a `hardcse art run` one; `hardcse art report`",
    ),
    "report an empty config": (
        ["art", "report", "{tmp}/empty_config_run"],
        "{tmp}/empty_config_run/config.yaml: empty or not a mapping of keys",
    ),
    "report a folder that is no run": (["art", "report", "{tmp}/junk_dir"], "not a run folder (no config.yaml)"),
    "report a damaged manifest": (["art", "report", "{tmp}/corrupt_manifest"], "manifest.json: not valid JSON (line 1"),
    "resume a damaged manifest": ([*ART[:5], "{tmp}/corrupt_manifest", "--resume"], "manifest.json: not valid JSON"),
    "compare a damaged eval.json": (["compare", "{tmp}/corrupt_eval"], "corrupt_eval/eval.json: not valid JSON"),
    "compare a missing later source": (["compare", "bundled:minilm-l6", "{tmp}/nope"], "nope': no such folder"),
    "compare a baseline typo": (
        ["compare", "bundled:minilm-l6", "--baseline", "typo"],
        "--baseline typo: not among the sources or groups; give a source or a folder of them",
    ),
    "art compare no run folder": (
        ["art", "compare", "{tmp}/empty_dir"],
        "empty_dir: not a run folder (no config.yaml)",
    ),
    "art compare another command's folder": (
        ["art", "compare", "{tmp}/diffaug_run"],
        "is a `hardcse diffaug train` folder, not a `hardcse art run` one",
    ),
    # model sources
    "model typo under a local folder": ([*ART, "encoder={tmp}/runs/typo"], "runs/typo': no such folder; give"),
    "model relative typo": ([*ART, "encoder=./nope"], "model './nope': no such folder"),
    "model with a space": ([*SIMCSE, "encoder=my model"], "model 'my model': no such folder"),
    "model empty folder": ([*ART, "encoder={tmp}/empty_dir"], "empty_dir: this folder holds no model"),
    "model folder of junk": ([*DIFFAUG, "encoder={tmp}/junk_dir"], "junk_dir: this folder holds no model"),
    "model is a file": ([*DATACUBE, "encoder={tmp}/a_file"], "a model source must be a folder, not a file"),
    "model unfinished run": ([*SIMCSE, "encoder={tmp}/unfinished_run"], "has no finished model/ yet"),
    "model unknown bundled": ([*NLI, "base_model=bundled:nope"], "unknown bundled model 'bundled:nope'"),
    "eval corrupt model": (
        ["eval", "--model", "{tmp}/corrupt_model", "--tasks", "STS-B-dev"],
        "{tmp}/corrupt_model/config.json: not valid JSON",
    ),
    "judge corrupt model": (
        ["art", "judge", "--synthetic", "{tmp}/synthetic.jsonl", "--judge", "{tmp}/corrupt_model"],
        "NLI model {tmp}/corrupt_model: {tmp}/corrupt_model/config.json: not valid JSON",
    ),
    "eval model typo": (["eval", "--model", "{tmp}/runs/typo"], "runs/typo': no such folder"),
    "generator typo": ([*ART, "generator.model={tmp}/runs/typo"], "generator.model: model"),
    # evaluation files and other readers
    "pairs header only": ([*EVAL, "{tmp}/header_only.tsv"], "at least two pairs with different 'score' values; 0"),
    "pairs one row": ([*EVAL, "{tmp}/one_row.tsv"], "1 pair(s)"),
    "pairs constant": ([*EVAL, "{tmp}/constant.tsv"], "all 3 scores are 3"),
    "pairs NaN score": ([*EVAL, "{tmp}/nan.tsv"], "nan.tsv:3: field 'score': 'nan' (not a finite number)"),
    "pairs inf score": ([*EVAL, "{tmp}/inf.tsv"], "inf.tsv:3: field 'score'"),
    "pairs empty file": ([*EVAL, "{tmp}/empty.tsv"], "the file is empty"),
    "pairs missing column": ([*EVAL, "{tmp}/no_score.tsv"], "missing column(s) ['score']"),
    "pairs not UTF-8": ([*EVAL, "{tmp}/latin1.tsv"], "latin1.tsv:2: not UTF-8 text"),
    "pairs unclosed quote": ([*EVAL, "{tmp}/unclosed.csv"], "unclosed.csv:2: broken quoting"),
    "pairs extra field": ([*EVAL, "{tmp}/fields.tsv"], "fields.tsv:2: 4 fields, the header has 3"),
    "pairs unknown type": ([*EVAL, "{tmp}/sheet.xlsx"], "unknown file type '.xlsx'"),
    "pairs missing": ([*EVAL, "{tmp}/nope.tsv"], "nope.tsv: no such file"),
    "pairs a folder": ([*EVAL, "{tmp}/empty_dir"], "empty_dir: a folder, not a file"),
    "eval unknown task": (["eval", "--model", "bundled:minilm-l6", "--tasks", "STS-X"], "unknown task(s) ['STS-X']"),
    "eval out is a file": ([*EVAL, "{tmp}/constant.tsv", "--out", "{tmp}/a_file"], "--out {tmp}/a_file: this is a"),
    "simcse data missing": ([*SIMCSE[:5], "{tmp}/nope.csv", *SIMCSE[6:]], "nope.csv: no such file"),
    "simcse data a folder": ([*SIMCSE[:5], "{tmp}/empty_dir", *SIMCSE[6:]], "empty_dir: a folder, not a file"),
    "judge synthetic a folder": (
        ["art", "judge", "--synthetic", "{tmp}/empty_dir", "--judge", "bundled:minilm-l6"],
        "empty_dir: a folder, not a file",
    ),
    "decontaminate a folder": (["decontaminate", "{tmp}/empty_dir"], "empty_dir: a folder, not a file"),
    "decontaminate out inside a file": (
        ["decontaminate", "{tmp}/triplets.csv", "--out", "{tmp}/a_file/x.csv"],
        "--out {tmp}/a_file/x.csv: {tmp}/a_file is a file",
    ),
    "judge synthetic without its fields": (
        ["art", "judge", "--synthetic", "{tmp}/good.jsonl", "--judge", "bundled:minilm-l6"],
        "good.jsonl:1: missing field(s) ['positive_cosine', 'negative_cosine', 'positive_reward'",
    ),
    "judge synthetic empty": (
        ["art", "judge", "--synthetic", "{tmp}/blank.jsonl", "--judge", "bundled:minilm-l6"],
        "blank.jsonl: no records",
    ),
    "judge out a folder": (
        ["art", "judge", "--synthetic", "{tmp}/synthetic.jsonl", "--judge", "bundled:minilm-l6", "--out", "{tmp}"],
        "this is a folder; give the path of a file",
    ),
    "nli eval out a file": (["nli", "eval", "--model", "bundled:minilm-l6", "--out", "{tmp}/a_file"], "this is a file"),
    "nli triplets out a folder": (["nli", "triplets", "--nli", "x.tsv", "--out", "{tmp}/empty_dir"], "is a folder"),
    "nli train header-only data": ([*NLI, "train_files=[{tmp}/nli_header.tsv]"], "hold no NLI pairs"),
    "nli train missing dev": ([*NLI, "dev_files=[{tmp}/nope.tsv]"], "nope.tsv: no such file"),
    "diffaug nli missing": ([*DIFFAUG, "nli_files=[{tmp}/nope.tsv]"], "nope.tsv: no such file"),
    "tune empty corpus": (
        ["art", "tune", "--config", "tune-cpu", "--out", "{tmp}/out", "anchors.corpus={tmp}/empty.txt"],
        "only 0 corpus sentences",
    ),
    "generate resumed with other anchors": (
        [*GENERATE, "{tmp}/generated", "--resume", "--anchors", "{tmp}/anchors.txt"],
        "the inputs differ from the run's in anchors ('held-out' -> '{tmp}/anchors.txt'), n_anchors (300 -> 2)",
    ),
    "generate anchors a folder": (
        ["art", "generate", "--config", "tune-cpu", "--out", "{tmp}/out", "--anchors", "{tmp}/empty_dir"],
        "empty_dir: a folder, not a file",
    ),
    "assay name of a run file": (
        ["assay", "--data", "{tmp}/triplets.csv", "{tmp}/triplets.csv", "--names", "run.log", "b", "--out", "{tmp}/o"],
        "'run.log' is a file of the run folder; give the file another name",
    ),
    "datacube instruction not text": ([*DATACUBE, "data={tmp}/tasks_not_text"], "task 't1': query: 3 is not text"),
    "datacube task file unlisted": ([*DATACUBE, "data={tmp}/tasks_unlisted"], "t2.jsonl: no task of"),
    "mix triplets a folder": ([*ART, "mix_triplets={tmp}/empty_dir"], "empty_dir: a folder, not a file (mix_triplets)"),
    "mix triplets without negatives": ([*ART, "mix_triplets={tmp}/pairs.csv"], "missing column(s) ['hard_neg']"),
    "judge broken JSONL": (
        ["art", "judge", "--synthetic", "{tmp}/broken.jsonl", "--judge", "bundled:minilm-l6"],
        "broken.jsonl:2: not valid JSON",
    ),
    "generate limit 0": (
        ["art", "generate", "--config", "tune-cpu", "--out", "{tmp}/out", "--limit", "0"],
        "--limit 0",
    ),
    "generate no anchors": (
        ["art", "generate", "--config", "tune-cpu", "--out", "{tmp}/out", "--anchors", "{tmp}/empty.txt"],
        "no anchor sentences",
    ),
    "usage: unknown command": (["art", "nope"], "invalid choice: 'nope'"),
    "usage: stray argument": (["eval", "--model", "bundled:minilm-l6", "stray"], "unrecognized arguments: stray"),
    "usage: bad number": (["art", "generate", "--out", "{tmp}/out", "--limit", "x"], "invalid int value: 'x'"),
    "simcse header-only data": (
        ["simcse", "train", "--config", "simcse-sup", "--data", "{tmp}/header_only.csv", "--out", "{tmp}/out"],
        "header_only.csv: no rows to train on",
    ),
    "diffaug unlabeled missing": ([*DIFFAUG, "unlabeled={tmp}/nope.txt"], "nope.txt: no such file"),
    "datacube data folder": ([*DATACUBE, "data={tmp}/empty_dir"], "no instructions.yaml"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_user_mistake_is_one_line_exit_2_and_leaves_nothing(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    bad_files(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    args, expected = CASES[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert expected.replace("{tmp}", str(tmp_path)) in lines[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written or removed


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGES = {
    "truncated weights": ("model.safetensors", _truncate, "model.safetensors: truncated: "),
    "weights not safetensors": (
        "model.safetensors",
        lambda p: p.write_bytes(b"PK\x03\x04 a zip file, not tensors" * 4),
        "model.safetensors: not a safetensors file",
    ),
    "config not JSON": ("config.json", lambda p: p.write_text("{not json"), "config.json: not valid JSON"),
    "tokenizer not JSON": ("tokenizer.json", lambda p: p.write_text('{"model": '), "tokenizer.json: not valid JSON"),
    "tokenizer wrong schema": ("tokenizer.json", lambda p: p.write_text('{"model": 3}'), "could not be loaded"),
    "modules not JSON": ("modules.json", lambda p: p.write_text("[{"), "modules.json: not valid JSON"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_model_file_is_named_in_one_line(damage, tiny_encoder_dir, capsys):
    name, spoil, expected = DAMAGES[damage]
    spoil(tiny_encoder_dir / name)
    assert main(["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: encoder {tiny_encoder_dir}: "), lines
    assert expected in lines[0]
    if "could not" not in expected:
        assert str(tiny_encoder_dir / name) in lines[0] and "replace this file" in lines[0]


@pytest.mark.parametrize("name", ["adapter_config.json", "adapter_model.safetensors"])
def test_a_damaged_adapter_file_is_named(name, tiny_lm_dir, tmp_path):
    from hardcse.art.config import GeneratorConfig
    from hardcse.art.generator.model import load_generator, save_generator
    from hardcse.errors import HardcseError

    config = GeneratorConfig(dtype="float32", device="cpu")
    model, _ = load_generator(str(tiny_lm_dir), config, trainable=True)
    save_generator(model, str(tiny_lm_dir), tmp_path / "tuned")
    _truncate(tmp_path / "tuned" / name)
    with pytest.raises(HardcseError, match=f"generator adapter .*tuned: .*tuned/{name}: .*replace this file"):
        load_generator(str(tmp_path / "tuned"), config)
