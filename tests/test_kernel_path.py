"""The AVX2 kernel path that `make test-avx2` runs the exact-number tests on: its caps reach torch and oneDNN.

The Makefile's ``AVX2_CAPS`` cap torch's own kernels (``ATEN_CPU_CAPABILITY``), oneDNN's (``ONEDNN_MAX_CPU_ISA``) and
MKL's (``MKL_ENABLE_INSTRUCTIONS``) at AVX2, so that a machine with AVX-512 or AMX runs what an AVX2-only CPU runs.
They do not reach OpenVINO's own kernels (its release builds cap only the oneDNN inside them) nor the other code
paths a library takes on an AMD CPU (MKL's among them): those are tested only where such a CPU runs the suite.
"""

import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def avx2_caps() -> dict[str, str]:
    """The caps as the Makefile sets them."""
    line = re.search(r"^AVX2_CAPS\s*:=\s*(.+)$", MAKEFILE.read_text(), re.MULTILINE)
    assert line, "the Makefile defines AVX2_CAPS"
    return dict(part.split("=", 1) for part in shlex.split(line.group(1)))


PROBE = """
import torch
print(torch.backends.cpu.get_cpu_capability())
x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
torch.ops.aten.mkldnn_convolution(x, w, None, [0, 0], [1, 1], [1, 1], 1)  # a oneDNN primitive: its ISA is logged
"""


@pytest.mark.exact_numbers
@pytest.mark.skipif(platform.machine() not in {"x86_64", "AMD64"}, reason="AVX2 is an x86 instruction set")
def test_the_avx2_caps_reach_torch_and_onednn():
    import os

    caps = avx2_caps()
    assert set(caps) == {"ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS"}
    env = os.environ | caps | {"ONEDNN_VERBOSE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "AVX2"  # torch's own kernels
    assert any(line.endswith("isa:Intel AVX2") for line in lines if "isa:" in line), done.stdout  # oneDNN's
