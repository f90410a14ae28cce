"""Shared fixtures: tiny randomly initialised models built in the test (never downloaded), small data files."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
import torch  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertModel  # noqa: E402

from hardcse.resources import bundled_encoder_dir  # noqa: E402

SENTENCES = [
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "Two dogs run across a field.",
    "The child is reading a book.",
    "A cat sleeps on the sofa.",
    "People are walking in the rain.",
    "A chef cooks pasta in a kitchen.",
    "The train arrives at the station.",
]


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    """A 2-layer, 32-dim BERT with random weights and the bundled encoder's tokenizer."""
    path = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(bundled_encoder_dir())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def tiny_encoder(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(tiny_bert_dir), max_seq_length=64)
    return SentenceTransformer(modules=[transformer, Pooling(32, "mean")], device="cpu")


@pytest.fixture
def tiny_encoder_dir(tiny_encoder, tmp_path):
    path = tmp_path / "tiny-encoder"
    tiny_encoder.save(str(path))
    return path


@pytest.fixture
def triplet_file(tmp_path):
    path = tmp_path / "triplets.csv"
    rows = ["sent0,sent1,hard_neg"]
    for i, s in enumerate(SENTENCES):
        rows.append(f'"{s}","{s.replace("A ", "One ")}","{SENTENCES[(i + 3) % len(SENTENCES)]}"')
    path.write_text("\n".join(rows) + "\n")
    return path
