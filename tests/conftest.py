"""Shared fixtures: tiny randomly initialised models built in the test (never downloaded), small data files."""

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from isolation import WriteCheck, isolate, remove, users_cache

REPO = Path(__file__).resolve().parent.parent
# the user's cache and the checkout as they were, watched for writes; then the session's own folders (a fresh model
# cache, HOME, Trackio's store) before anything imports hardcse
_WRITES = WriteCheck(new_only=[REPO], new_or_changed=[users_cache()])
SESSION_FOLDER = isolate()
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# exact PyTorch numbers everywhere by default (what `engine: auto` resolves to, read by each command and by library
# calls made without an engine); tests/test_engines.py runs the OpenVINO engine itself
os.environ.setdefault("HARDCSE_ENGINE", "torch")

import pytest  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    AutoTokenizer,
    BertConfig,
    BertModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from hardcse.resources import bundled_encoder_dir  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if a test wrote outside its temporary folders (tests/isolation.py); remove the session's."""
    written = _WRITES.written()
    remove(SESSION_FOLDER)
    if written:
        shown = "\n  ".join(written[:20]) + (f"\n  ... and {len(written) - 20} more" if len(written) > 20 else "")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"the test session wrote {len(written)} files outside its temporary folders:\n  {shown}"
        if reporter is not None:
            reporter.write_line(f"error: {message}", red=True, bold=True)
        else:
            print(f"error: {message}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _root_log_handlers_are_restored():
    """An in-process CLI call installs a stderr handler on pytest's captured stream, which closes with its test;
    later tests would log into the closed stream ("--- Logging error ---")."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


SENTENCES = [
    "A man is playing a guitar on the porch.",
    "A woman is slicing an onion for soup.",
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


WORDS = ["[PAD]", "[EOS]", "[UNK]", "good", "bad", "cat", "dog", "runs", "sleeps", "the", "a", "very"]


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory):
    """A 2-layer Llama over a 12-word vocabulary, random weights, word-level tokenizer."""
    path = tmp_path_factory.mktemp("tiny-lm")
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", eos_token="[EOS]", unk_token="[UNK]"
    )
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(WORDS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_nli_dir(tiny_bert_dir, tmp_path_factory):
    """A 3-way NLI cross-encoder with random weights and the fixed label order."""
    from sentence_transformers.cross_encoder import CrossEncoder

    from hardcse.data.nli import LABEL_ID, LABELS

    path = tmp_path_factory.mktemp("tiny-nli")
    model = CrossEncoder(
        str(tiny_bert_dir),
        num_labels=3,
        config_kwargs={"id2label": dict(enumerate(LABELS)), "label2id": dict(LABEL_ID)},
    )
    model.save_pretrained(str(path))
    return path


SUBJECTS = ["the cat", "a dog", "the good cat", "a very bad dog", "the dog"]
VERBS = ["runs", "sleeps", "runs very", "sleeps a", "runs the"]


@pytest.fixture
def corpus(tmp_path):
    """50 distinct anchors in the tiny LM's vocabulary, and one too short to be an anchor."""
    sentences = [f"{s} {v} and {s} {w} here" for s in SUBJECTS for v in VERBS for w in VERBS[:2]]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(sentences + ["too short"]) + "\n")
    return path


def run_until_killed(args: list[str], stop_when, timeout: float = 300) -> None:
    """Start `hardcse ARGS...` in a process and SIGKILL it as soon as ``stop_when()`` holds (which must happen
    before the process ends by itself)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hardcse.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + timeout
    while not stop_when() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    reached = stop_when()
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert reached and process.returncode == -signal.SIGKILL, "the run ended before the kill point"


@pytest.fixture
def tiny_tune_overrides(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, corpus) -> list[str]:
    """The overrides that point a TuneConfig at the tiny models and corpus, with RL batches of 4 in minibatches of
    2; a test adds its own steps and sizes."""
    return [
        f"encoder={tiny_encoder_dir}",
        f"discriminator={tiny_nli_dir}",
        f"generator.model={tiny_lm_dir}",
        f"anchors.corpus={corpus}",
        "anchors.held_out=5",
        "anchors.min_words=3",
        "rl.batch_size=4",
        "rl.minibatch_size=2",
    ]
