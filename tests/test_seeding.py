"""Seeded blocks (hardcse/seeding.py): a block draws what a global reseed would have drawn, and the caller's random
state is as it was after it; no other module of src/ reseeds a global generator."""

import random
import re
from pathlib import Path

import numpy as np
import torch

import hardcse
from hardcse.seeding import callers_random_state, seeded_torch


def test_a_seeded_block_draws_what_a_reseed_draws_and_leaves_the_callers_generator_as_it_was():
    torch.manual_seed(11)
    reseeded = torch.rand(4)
    torch.manual_seed(5)
    callers = torch.random.get_rng_state()
    with seeded_torch(11):
        inside = torch.rand(4)
    assert torch.equal(inside, reseeded)
    assert torch.equal(torch.random.get_rng_state(), callers)


def test_the_callers_torch_numpy_and_python_streams_go_on_as_they_were_after_a_block_that_reseeds_them():
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    with callers_random_state():
        random.seed(9), np.random.seed(9), torch.manual_seed(9)  # what transformers' Trainer does
        random.random(), np.random.rand(), torch.rand(1)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


GLOBAL_RESEED = re.compile(r"(?<![.\w])(torch\.manual_seed|torch\.cuda\.manual_seed(_all)?|np\.random\.seed|"
                           r"random\.seed|set_seed)\(")  # fmt: skip


def test_no_module_of_src_reseeds_a_global_generator_outside_a_seeded_block():
    src = Path(hardcse.__file__).parent
    found = [
        f"{path.relative_to(src)}:{number}: {line.strip()}"
        for path in src.rglob("*.py")
        if path.name != "seeding.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if GLOBAL_RESEED.search(line.split("#")[0])
    ]
    assert not found, found
    assert GLOBAL_RESEED.search("    torch.manual_seed(3)")
    assert not GLOBAL_RESEED.search("torch.Generator().manual_seed(3)")  # a generator of its own
