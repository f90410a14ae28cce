"""docs/python.md runs as written: its Python blocks, in order, in one fresh process on the bundled models, at the
smoke config's size: ``config="smoke"`` in place of the quickstart and 8 sentences in place of 300, from a
``my_sentences.txt`` of the bundled Wikipedia sentences (the 620 that art_run needs)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hardcse.data.corpus import WIKI_SENTENCES
from hardcse.paths import data_dir

PAGE = Path(__file__).resolve().parents[1] / "docs" / "python.md"

pytestmark = pytest.mark.slow  # the bundled generator writes and an ART round runs: `make test`, not `test-fast`


def page_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_python_page_runs_from_sentences_to_a_trained_encoder_and_an_art_round(tmp_path):
    blocks = page_blocks()
    script = "\n".join(blocks)
    assert script.count('"quickstart"') == 2 and script.count("sentences[:300]") == 1  # the two swaps below
    script = script.replace('"quickstart"', '"smoke"').replace("sentences[:300]", "sentences[:8]")
    corpus = re.search(r"anchors\.corpus=([\w.]+)", script).group(1)
    assert f'Path("{corpus}")' in script  # the file the first block reads is the one art_run reads
    sentences = (data_dir() / WIKI_SENTENCES).read_text(encoding="utf-8").splitlines()
    usable = [s for s in dict.fromkeys(sentences) if 6 <= len(s.split()) <= 40]
    (tmp_path / corpus).write_text("\n".join(usable[:700]) + "\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = done.stdout
    assert re.search(r"^\d+ kept of 8 - dropped: \{", shown, re.M)  # the first block's counts
    assert "features: ['anchor', 'positive', 'negative']" in shown
    assert re.search(r"\{'STS-B-dev': -?\d+\.\d+\}", shown)  # the trained encoder's dev score
    assert "| generated − mined |" in shown  # the assay's table
    assert (tmp_path / "runs" / "my-triplets" / "dataset" / "train.parquet").is_file()
    assert (tmp_path / "runs" / "my-encoder" / "config_sentence_transformers.json").is_file()
    assert (tmp_path / "runs" / "my-art" / "report.md").is_file()


def test_the_page_shows_the_api_it_tests():
    """Every public name the page calls is exported by hardcse (so the page cannot drift from the package)."""
    import hardcse

    called = set(re.findall(r"hardcse\.(\w+)\(", "\n".join(page_blocks())))
    assert called == {"generate_triplets", "load_encoder", "evaluate_sts", "run_assay", "art_run", "model_folder"}
    assert called <= set(hardcse.__all__)
