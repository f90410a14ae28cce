"""A matplotlib figure saved as a palette PNG, and closed.

matplotlib writes 32-bit RGBA pixels; a plot's lines, text and fills take few colours. Quantized to a palette of
256 (Pillow's median cut, no dithering: the same pixels give the same file), a plot looks the same (about 0.1 of
255 per channel on average, benchmarks' plots) at about a third of the size: every run folder keeps its plots and
every clone of the repository carries the benchmarks' ones.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_png(fig: Figure, path: str | Path, dpi: int) -> Path:
    """Save ``fig`` to ``path`` as a palette PNG at ``dpi``, close it, return the path."""
    import matplotlib.pyplot as plt

    rendered = io.BytesIO()
    fig.savefig(rendered, format="png", dpi=dpi)
    plt.close(fig)
    rendered.seek(0)
    with Image.open(rendered) as image:
        palette_png(image).save(path, format="png", optimize=True)
    return Path(path)


def palette_png(image: Image.Image) -> Image.Image:
    """``image`` (RGB or RGBA on an opaque background, as matplotlib renders) on a palette of 256 colours."""
    return image.convert("RGB").quantize(colors=256, dither=Image.Dither.NONE)
