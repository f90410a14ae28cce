"""Multi-task instruction data: tasks of (query, positive, negative) instances, each text with its instruction.

Readers: the MEDI format of INSTRUCTOR (a JSON list or JSONL of ``{"query": [instruction, text], "pos": [...],
"neg": [...], "task_name": ...}``) and a folder of per-task JSONL files; plus a built-in collection assembled
from the vendored data (no STS test set, no NLI evaluation split).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hardcse.data.corpus import WIKI_SENTENCES, read_sentences
from hardcse.data.decontamination import Decontamination
from hardcse.data.jsonl import read_jsonl_numbered, read_utf8
from hardcse.data.nli import LABEL_ID, read_nli_files
from hardcse.data.pairs import read_labeled_pairs
from hardcse.data.sts import read_scored_pairs
from hardcse.data.table import read_table
from hardcse.data.triplets import read_triplets
from hardcse.errors import HardcseError, not_a_file
from hardcse.paths import data_dir


@dataclass(frozen=True)
class Instance:
    query: str
    positive: str
    negative: str


@dataclass
class Task:
    """One task: its three instructions and its instances (texts without instructions)."""

    name: str
    query_instruction: str
    positive_instruction: str
    negative_instruction: str
    instances: list[Instance] = field(default_factory=list)

    def instructed(self, instance: Instance) -> tuple[str, str, str]:
        """The three texts with their instructions prepended, as the encoder sees them."""
        return (
            _join(self.query_instruction, instance.query),
            _join(self.positive_instruction, instance.positive),
            _join(self.negative_instruction, instance.negative),
        )


def _join(instruction: str, text: str) -> str:
    return f"{instruction} {text}" if instruction else text


def read_medi(path: str | Path) -> list[Task]:
    """Tasks from a MEDI file (JSON list or JSONL). A task's instructions are those of its first instance; an
    instance whose instructions differ from them is an error (``file:line``), since a task has one of each."""
    path = Path(path)
    text = read_utf8(path)
    if text.lstrip().startswith("["):
        try:
            rows = [(i + 1, row) for i, row in enumerate(json.loads(text))]
        except json.JSONDecodeError as e:
            raise HardcseError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        where = "item"
    else:
        rows = read_jsonl_numbered(path, text)
        where = "line"
    tasks: dict[str, Task] = {}
    for number, row in rows:
        place = f"{path}:{number}" if where == "line" else f"{path}: item {number}"
        if not isinstance(row, dict) or "task_name" not in row:
            raise HardcseError(f"{place}: expected an object with query, pos, neg and task_name")
        parts = []
        for key in ("query", "pos", "neg"):
            value = row.get(key)
            if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
                raise HardcseError(f"{place}: {key} must be [instruction, text], got {value!r}")
            if not value[1].strip():
                raise HardcseError(f"{place}: {key} has an empty text")
            parts.append(value)
        name = str(row["task_name"])
        task = tasks.setdefault(name, Task(name, parts[0][0], parts[1][0], parts[2][0]))
        if (task.query_instruction, task.positive_instruction, task.negative_instruction) != tuple(p[0] for p in parts):
            raise HardcseError(f"{place}: task {name!r} changes its instructions; one set per task is supported")
        task.instances.append(Instance(parts[0][1], parts[1][1], parts[2][1]))
    if not tasks:
        raise HardcseError(f"{path}: no instances")
    return list(tasks.values())


def read_task_folder(folder: str | Path) -> list[Task]:
    """``instructions.yaml`` (``task: {query: ..., positive: ..., negative: ...}``) and one ``task.jsonl`` per
    task with rows ``{"query": ..., "pos": ..., "neg": ...}``."""
    folder = Path(folder)
    spec_path = folder / "instructions.yaml"
    if not spec_path.is_file():
        raise HardcseError(f"{folder}: no instructions.yaml (task: {{query, positive, negative}} instructions)")
    try:
        spec = yaml.safe_load(read_utf8(spec_path)) or {}
    except yaml.YAMLError as e:
        raise HardcseError(f"{spec_path}: not valid YAML ({e})".splitlines()[0]) from None
    if not isinstance(spec, dict):
        raise HardcseError(f"{spec_path}: expected a mapping of task -> {{query, positive, negative}} instructions")
    tasks = []
    for name, instructions in spec.items():
        if not isinstance(instructions, dict) or set(instructions) != {"query", "positive", "negative"}:
            raise HardcseError(f"{spec_path}: task {name!r} needs exactly query, positive and negative")
        for key, text in instructions.items():
            if not isinstance(text, str):
                raise HardcseError(f"{spec_path}: task {name!r}: {key}: {text!r} is not text; write the instruction")
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            raise not_a_file(path, f" (listed in {spec_path})")
        task = Task(name, instructions["query"], instructions["positive"], instructions["negative"])
        for number, row in read_jsonl_numbered(path):
            texts = [row.get(k) for k in ("query", "pos", "neg")]
            if not all(isinstance(t, str) and t.strip() for t in texts):
                raise HardcseError(f"{path}:{number}: needs non-empty query, pos and neg strings")
            task.instances.append(Instance(*texts))
        if not task.instances:
            raise HardcseError(f"{path}: no instances")
        tasks.append(task)
    if not tasks:
        raise HardcseError(f"{spec_path}: lists no task")
    unlisted = sorted(p.name for p in folder.glob("*.jsonl") if p.stem not in spec)
    if unlisted:  # nothing is left out silently
        raise HardcseError(f"{folder}/{unlisted[0]}: no task of {spec_path} names it; add its instructions or move it")
    return tasks


def triplet_task(source: str | Path) -> Task:
    """A task of (anchor, positive, negative) triplets: a SimCSE triplet CSV, or an ART run folder (the kept
    triplets of all its rounds, ``round_*/triplets.csv``), with the sentence-similarity instructions of the
    built-in collection's STS-B task. Its name is ``triplets-`` and the file's stem or the run folder's name."""
    source = Path(source)
    if source.is_dir():
        files = sorted(source.glob("round_*/triplets.csv"))
        if not files:
            raise HardcseError(f"triplet_tasks: {source} holds no round_*/triplets.csv (is it an ART run folder?)")
        name = source.name
    else:
        files, name = [source], source.stem
    if not all(f.is_file() for f in files):
        raise not_a_file(next(f for f in files if not f.is_file()), " (triplet_tasks)")
    task = _task(
        f"triplets-{name}",
        RETRIEVE.format(what="sentence", target="a semantically similar sentence"),
        "Represent the sentence for retrieval:",
    )
    task.instances = [Instance(*t) for f in files for t in read_triplets(f)]
    if not task.instances:
        raise HardcseError(f"triplet_tasks: {source}: no triplets")
    return task


# ----- the built-in collection ---------------------------------------------------------------------------------

RETRIEVE = "Represent the {what} for retrieving {target}:"


def _task(name: str, query: str, positive: str, negative: str | None = None) -> Task:
    return Task(name, query, positive, negative if negative is not None else positive)


def builtin_collection(
    max_per_task: int | None = 2000,
    seed: int = 42,
    check: Decontamination | None = None,
    extra: list[Task] | None = None,
) -> list[Task]:
    """Ten tasks from the vendored files, each with its own instructions (INSTRUCTOR style). Only training
    splits (and PAWS-Wiki dev, which nothing evaluates on) and no NLI evaluation split; with ``check``, no instance
    with a text that matches an STS test or dev text (STS-B train, SICK train and MRPC reuse many of them),
    dropped before each task is cut to ``max_per_task``.

    Negatives: the data's own hard negative where one exists (NLI contradictions, a low-score STS-B partner of
    the same anchor, a wrong TrecQA answer or PAWS non-paraphrase of the same question / sentence); otherwise
    a random text of the same task (a seeded draw, never the instance's own positive)."""
    rng = random.Random(seed)
    root = data_dir()
    tasks = [
        _nli_task(rng, "snli", ["nli/SNLI-train-sample/train.tsv"], "image caption", "a sentence it entails"),
        _nli_task(rng, "mnli", ["nli/MNLI-train-sample/train.tsv"], "premise", "a sentence it entails"),
        _nli_task(rng, "sick-entailment", ["sts/SICK/train.tsv"], "scene description", "a description it entails"),
        _stsb_task(root, rng),
        _pair_task(
            root,
            rng,
            "mrpc",
            "pairs/MRPC/train.tsv",
            ("sentence1", "sentence2", "label"),
            "news sentence",
            "its paraphrase",
            hard_negatives=True,
        ),
        _pair_task(
            root,
            rng,
            "qqp",
            "pairs/QQP-sample/train.tsv",
            ("question1", "question2", "label"),
            "question",
            "a duplicate question",
        ),
        _pair_task(
            root,
            rng,
            "paws",
            "pairs/PAWS-Wiki/dev.tsv",
            ("sentence1", "sentence2", "label"),
            "Wikipedia sentence",
            "its paraphrase",
            hard_negatives=True,
        ),
        _pair_task(
            root,
            rng,
            "trecqa",
            "pairs/TrecQA/train.tsv",
            ("question", "answer_sentence", "label"),
            "question",
            "a sentence that answers it",
            hard_negatives=True,
            different_side=True,
        ),
        _qnli_task(root, rng),
        _wiki_task(root, rng),
        *(extra or []),  # tasks of the caller's (``triplet_tasks``), sampled and checked like the rest
    ]
    if check is not None:
        decontaminate_tasks(tasks, check)
    for task in tasks:
        rng.shuffle(task.instances)
        if max_per_task is not None:
            del task.instances[max_per_task:]
    return tasks


def decontaminate_tasks(tasks: list[Task], check: Decontamination) -> None:
    """Drop, task by task (each a source of ``check``), the instances whose query, positive or negative matches
    an evaluation text. A task left with no instance is an error (use other data or decontamination.enabled)."""
    for task in tasks:
        texts = lambda i: [("query", i.query), ("positive", i.positive), ("negative", i.negative)]  # noqa: E731
        task.instances = check.filter(task.name, task.instances, texts)
        if not task.instances:
            raise HardcseError(
                f"task {task.name}: every instance has a text that matches an evaluation text (see the "
                "decontamination log); drop the task or set decontamination.enabled: false"
            )


def _nli_task(rng: random.Random, name: str, files: list[str], what: str, target: str) -> Task:
    """Entailment pairs are (query, positive); a contradiction of the same premise is the negative when there
    is one (SimCSE's triplets), otherwise a random hypothesis."""
    pairs = read_nli_files(files)
    contradictions: dict[str, list[str]] = defaultdict(list)
    for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True):
        if label == LABEL_ID["contradiction"]:
            contradictions[premise].append(hypothesis)
    pool = sorted(set(pairs.hypotheses))
    task = _task(name, RETRIEVE.format(what=what, target=target), "Represent the hypothesis for retrieval:")
    for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True):
        if label == LABEL_ID["entailment"]:
            hard = contradictions.get(premise)
            negative = hard[0] if hard else _random_other(rng, pool, {premise, hypothesis})
            task.instances.append(Instance(premise, hypothesis, negative))
    return task


def _random_other(rng: random.Random, pool: list[str], avoid: set[str]) -> str:
    while True:
        candidate = pool[rng.randrange(len(pool))]
        if candidate not in avoid:
            return candidate


def _stsb_task(root: Path, rng: random.Random) -> Task:
    """STS-B train: pairs scored >= 4 are positives; a pair scored <= 1.5 sharing the anchor is the negative."""
    pairs = read_scored_pairs(root / "sts/STSBenchmark/train.tsv")
    low: dict[str, list[str]] = defaultdict(list)
    for a, b, score in zip(pairs.sentences1, pairs.sentences2, pairs.scores, strict=True):
        if score <= 1.5:
            low[a].append(b)
            low[b].append(a)
    pool = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    task = _task(
        "stsb-train",
        RETRIEVE.format(what="sentence", target="a semantically similar sentence"),
        "Represent the sentence for retrieval:",
    )
    for a, b, score in zip(pairs.sentences1, pairs.sentences2, pairs.scores, strict=True):
        if score >= 4.0:
            negative = low[a][0] if low.get(a) else _random_other(rng, pool, {a, b})
            task.instances.append(Instance(a, b, negative))
    return task


def _pair_task(
    root: Path,
    rng: random.Random,
    name: str,
    path: str,
    columns: tuple[str, str, str],
    what: str,
    target: str,
    hard_negatives: bool = False,
    different_side: bool = False,
) -> Task:
    """Label-1 pairs are (query, positive); with ``hard_negatives`` a label-0 partner of the same query is the
    negative when there is one. ``different_side``: positives are another kind of text than queries."""
    pairs = read_labeled_pairs(root / path, columns)
    wrong: dict[str, list[str]] = defaultdict(list)
    for a, b, label in zip(pairs.sentences1, pairs.sentences2, pairs.labels, strict=True):
        if label == 0:
            wrong[a].append(b)
    pool = sorted(set(pairs.sentences2) if different_side else set(pairs.sentences1) | set(pairs.sentences2))
    side = "answer sentence" if different_side else what
    task = _task(name, RETRIEVE.format(what=what, target=target), f"Represent the {side} for retrieval:")
    for a, b, label in zip(pairs.sentences1, pairs.sentences2, pairs.labels, strict=True):
        if label == 1:
            negative = wrong[a][0] if hard_negatives and wrong.get(a) else _random_other(rng, pool, {a, b})
            task.instances.append(Instance(a, b, negative))
    return task


def _qnli_task(root: Path, rng: random.Random) -> Task:
    """QNLI: a question and a sentence that answers it; a non-answering sentence for the same question (or a
    random one) as the negative."""
    table = read_table(
        root / "pairs/QNLI-sample/train.tsv",
        ["question", "sentence", "label"],
        converters={"label": lambda v: v == "entailment" if v in ("entailment", "not_entailment") else _bad(v)},
    )
    questions, sentences, answers = table.column("question"), table.column("sentence"), table.column("label")
    wrong: dict[str, list[str]] = defaultdict(list)
    for q, s, answers_it in zip(questions, sentences, answers, strict=True):
        if not answers_it:
            wrong[q].append(s)
    pool = sorted(set(sentences))
    task = _task(
        "qnli",
        RETRIEVE.format(what="question", target="a passage sentence that answers it"),
        "Represent the passage sentence for retrieval:",
    )
    for q, s, answers_it in zip(questions, sentences, answers, strict=True):
        if answers_it:
            negative = wrong[q][0] if wrong.get(q) else _random_other(rng, pool, {s})
            task.instances.append(Instance(q, s, negative))
    return task


def _bad(value: str) -> bool:
    raise ValueError(f"label must be entailment or not_entailment, not {value!r}")


def _wiki_task(root: Path, rng: random.Random) -> Task:
    """Unsupervised: a Wikipedia sentence against itself (dropout makes the two views differ), a random other
    sentence as the negative."""
    sentences = sorted(set(read_sentences(root / WIKI_SENTENCES)))
    task = _task(
        "wiki-unsup",
        "Represent the Wikipedia sentence for retrieving the same sentence:",
        "Represent the Wikipedia sentence for retrieval:",
    )
    task.instances = [Instance(s, s, _random_other(rng, sentences, {s})) for s in sentences]
    return task
