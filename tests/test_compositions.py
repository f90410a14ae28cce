"""The three methods composed: ART's triplets in Data-CUBE's instance order, a DiffAug encoder as ART's start,
ART's triplets as a Data-CUBE task."""

import pytest
import torch

from conftest import SENTENCES
from hardcse.art.config import ArtRunConfig
from hardcse.art.run import _easy_to_hard
from hardcse.batching import ordered_batches
from hardcse.config import load_config
from hardcse.data.multitask import triplet_task
from hardcse.data.triplets import write_triplets
from hardcse.datacube.config import DataCubeConfig
from hardcse.datacube.plan import load_tasks
from hardcse.diffaug.prefix import PrefixedTransformer, prefixed
from hardcse.diffaug.run import diffaug_run
from hardcse.encoder.build import load_encoder
from hardcse.encoder.encode import pair_cosines
from hardcse.encoder.simcse import SimCSETraining, train_simcse
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import dev_evaluator

TRIPLETS = [(s, s.replace("A ", "One "), SENTENCES[(i + 3) % len(SENTENCES)]) for i, s in enumerate(SENTENCES)]


def test_art_triplets_easy_to_hard_and_trained_in_that_order(tiny_encoder):
    ordered = _easy_to_hard(tiny_encoder, TRIPLETS, Engine("torch"))
    anchors, positives, negatives = zip(*ordered, strict=True)
    phi = pair_cosines(tiny_encoder, list(anchors), list(positives)) - pair_cosines(
        tiny_encoder, list(anchors), list(negatives)
    )
    assert sorted(ordered) == sorted(TRIPLETS) and list(phi) == sorted(phi, reverse=True)
    sampler = ordered_batches(7, 3)(list(range(7)), batch_size=3, drop_last=False)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6]]
    assert load_config(ArtRunConfig, overrides=["encoder_order=easy_to_hard"]).encoder_order == "easy_to_hard"
    with pytest.raises(HardcseError, match="encoder_order"):
        load_config(ArtRunConfig, overrides=["encoder_order=hardest_first"])


def test_a_diffaug_encoder_trains_on_as_arts_starting_encoder(tmp_path, tiny_encoder_dir, corpus):
    from test_diffaug import tiny_config

    nli = tmp_path / "nli.tsv"
    rows = [f"{s}\tSomeone is doing something.\tentailment\n{s}\tNobody is there.\tcontradiction" for s in SENTENCES]
    nli.write_text("premise\thypothesis\tlabel\n" + "\n".join(rows) + "\n")
    diffaug = diffaug_run(tiny_config(tiny_encoder_dir, nli, corpus, stages="[1]"), tmp_path / "diffaug")
    start = load_encoder(str(tmp_path / "diffaug"))  # a run folder stands for its model, as `encoder:` in ART
    before = {k: v.clone() for k, v in prefixed(start).prefixes.state_dict().items()}
    settings = ["training.max_steps=2", "training.batch_size=4", "training.learning_rate=1e-2"]
    config = load_config(SimCSETraining, overrides=settings)
    evaluator = dev_evaluator(start.max_seq_length, Engine.from_environment())
    train_simcse(
        start, TRIPLETS, "sup", config, tmp_path / "round_1_encoder", evaluator=evaluator, in_order=True
    )  # ART's encoder stage
    trained = load_encoder(str(tmp_path / "round_1_encoder"))
    assert isinstance(trained[0], PrefixedTransformer) and diffaug.name == "model"
    after = prefixed(trained).prefixes.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the prefixes trained on with the encoder


def test_art_triplets_as_a_datacube_task(tmp_path):
    run = tmp_path / "art-run"
    for r, rows in ((1, TRIPLETS[:5]), (2, TRIPLETS[5:])):
        (run / f"round_{r}").mkdir(parents=True)
        write_triplets(run / f"round_{r}" / "triplets.csv", rows)
    task = triplet_task(run)
    assert task.name == "triplets-art-run" and [(i.query, i.positive, i.negative) for i in task.instances] == TRIPLETS
    assert task.instructed(task.instances[0])[0].startswith("Represent the sentence for retrieving")
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "instructions.yaml").write_text("a: {query: 'Q:', positive: 'P:', negative: 'N:'}\n")
    (folder / "a.jsonl").write_text('{"query": "q1", "pos": "p1", "neg": "n1"}\n')
    config = load_config(DataCubeConfig, overrides=[f"data={folder}", f"triplet_tasks=[{run}]", "max_per_task=4"])
    tasks = load_tasks(config)
    assert [t.name for t in tasks] == ["a", "triplets-art-run"] and len(tasks[1].instances) == 4
    with pytest.raises(HardcseError, match="holds no round_"):
        triplet_task(tmp_path / "tasks")
