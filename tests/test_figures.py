"""Plots are saved as palette PNGs: the same look, a fraction of the bytes, the same file for the same figure."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from hardcse.figures import save_png  # noqa: E402


def figure():
    fig, ax = plt.subplots(figsize=(4, 3))
    x = np.linspace(0, 6, 200)
    for k in range(4):
        ax.plot(x, np.sin(x + k), label=f"curve {k}")
    ax.fill_between(x, -0.5, 0.5, alpha=0.2)
    ax.legend()
    return fig


def test_a_plot_is_saved_on_a_palette_looking_as_matplotlib_drew_it(tmp_path):
    rendered = io.BytesIO()
    fig = figure()
    fig.savefig(rendered, format="png", dpi=80)
    path = save_png(fig, tmp_path / "plot.png", dpi=80)
    assert not plt.get_fignums()  # closed
    with Image.open(path) as saved, Image.open(rendered) as original:
        assert saved.mode == "P" and saved.size == original.size
        difference = np.abs(np.asarray(saved.convert("RGB"), int) - np.asarray(original.convert("RGB"), int))
    assert difference.mean() < 1.0  # of 255, per channel
    assert path.stat().st_size < 0.6 * len(rendered.getvalue())


def test_the_same_figure_gives_the_same_file(tmp_path):
    first = save_png(figure(), tmp_path / "a.png", dpi=80).read_bytes()
    assert save_png(figure(), tmp_path / "b.png", dpi=80).read_bytes() == first
