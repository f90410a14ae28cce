"""Sentence encoders: build, encode fast, train with the SimCSE objectives."""

from typing import Literal, get_args

# default: the model's own head; cls / mean: that pooling; cls_mlp: SimCSE's [CLS] + Linear + tanh
PoolingName = Literal["default", "cls", "cls_mlp", "mean"]
POOLINGS: tuple[str, ...] = get_args(PoolingName)
