"""Corpora read as a stream in every format, and anchors drawn from them as a seeded bottom-N sample."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import Dataset, DatasetDict

from hardcse.art.config import AnchorConfig
from hardcse.art.synthesis.anchors import _key, split_anchors
from hardcse.data.corpus_stream import stream_sentences
from hardcse.errors import HardcseError

SENTENCES = [f"Sentence number {k} of the corpus here." for k in range(40)]


@pytest.fixture
def corpora(tmp_path):
    """The same 40 sentences (and a blank row) in every format a corpus may come in."""
    rows = [*SENTENCES[:20], "", *SENTENCES[20:]]
    (tmp_path / "c.txt").write_text("\n".join(rows) + "\n")
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps({"id": i, "text": s}) for i, s in enumerate(rows)) + "\n")
    (tmp_path / "c.csv").write_text("id,text\n" + "".join(f'{i},"{s}"\n' for i, s in enumerate(rows)))
    (tmp_path / "c.tsv").write_text("id\ttext\n" + "".join(f"{i}\t{s}\n" for i, s in enumerate(rows)))
    pq.write_table(pa.table({"text": rows, "id": list(range(len(rows)))}), tmp_path / "c.parquet", row_group_size=7)
    Dataset.from_dict({"text": rows}).save_to_disk(str(tmp_path / "saved"))
    DatasetDict({"train": Dataset.from_dict({"text": rows})}).save_to_disk(str(tmp_path / "saved_dict"))
    return tmp_path


@pytest.mark.parametrize("name", ["c.txt", "c.jsonl", "c.csv", "c.tsv", "c.parquet", "saved", "saved_dict/train"])
def test_every_format_streams_the_same_sentences(corpora, name):
    assert list(stream_sentences(corpora / name)) == SENTENCES


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (b"fine\n\xff\xfe\n", "bad.txt", "bad.txt:2: not UTF-8"),
        (b'{"text": "a"}\n[1]\n', "bad.jsonl", "bad.jsonl:2: expected a JSON object per line"),
        (b'{"text": "a"}\n{"id": 1}\n', "bad2.jsonl", "bad2.jsonl:2: expected an object with a text 'text'"),
        (b"id,sentence\n1,a\n", "bad.csv", "bad.csv:1: no column 'text'"),
        (b"id,text\n1,a,b\n", "bad2.csv", "bad2.csv:2: 3 fields, the header has 2"),
        (b"a\n", "bad.xlsx", "unknown corpus type '.xlsx'"),
    ],
)
def test_corpus_mistakes_name_the_file_and_line(tmp_path, content, name, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(HardcseError, match=message.replace("(", r"\(").replace("[", r"\[")):
        list(stream_sentences(tmp_path / name))


def test_a_dataset_dict_folder_asks_for_one_split(corpora):
    with pytest.raises(HardcseError, match="a DatasetDict; give the folder of one split"):
        list(stream_sentences(corpora / "saved_dict"))


def test_anchors_are_the_smallest_keyed_hashes_whatever_the_file_order(corpora, tmp_path):
    full = split_anchors(AnchorConfig(corpus=str(corpora / "c.txt"), held_out=5))
    assert sorted(full.train + full.held_out) == sorted(SENTENCES)
    keys = [_key(s, 42) for s in full.train + full.held_out]
    assert keys == sorted(keys)  # the order of the keyed hashes: a seeded permutation
    # a bottom-N sample: the first N of that order, from a reversed file with duplicates, in any format
    (tmp_path / "r.txt").write_text("\n".join(SENTENCES[::-1] + SENTENCES[:10]) + "\n")
    for corpus in (tmp_path / "r.txt", corpora / "c.parquet"):
        sample = split_anchors(AnchorConfig(corpus=str(corpus), held_out=3, max_anchors=12))
        assert sample.train + sample.held_out == (full.train + full.held_out)[:12]
        assert len(sample.held_out) == 3
    other_seed = split_anchors(AnchorConfig(corpus=str(corpora / "c.txt"), held_out=5, seed=7))
    assert other_seed.train != full.train
    with pytest.raises(HardcseError, match=r"\(anchors.max_anchors\); need more than held_out=12"):
        split_anchors(AnchorConfig(corpus=str(corpora / "c.txt"), held_out=12, max_anchors=12))
