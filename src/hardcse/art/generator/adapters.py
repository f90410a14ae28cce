"""LoRA adapters handed to OpenVINO GenAI, which adds alpha x B A to a product's output as PEFT does.

GenAI finds the base model's product for each adapter tensor by name (PEFT's saved names, ``...q_proj.lora_A.weight``,
contain the product's) and takes PEFT's scaling (lora_alpha / r, or / sqrt(r) under rsLoRA) as alpha. Two uses:

- :func:`lora_adapter`: a PEFT model's current weights, handed to the pipeline at every call (RL's rollouts in
  OpenVINO, :mod:`hardcse.art.rl.rollouts`): a policy changed by an update samples without a new export.
- :func:`saved_adapter`: a generator folder's saved adapter, fused into the weights once, as the pipeline is built
  (synthesis, the held-out comparison: :mod:`hardcse.art.generator.texts`): a tuned generator needs no export of
  its own. Only a plain LoRA is fused; for any other the caller exports the model PEFT merges.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

# what GenAI can apply an adapter to: products with a weight inside the decoder layers
OPENVINO_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# the fields of a saved LoraConfig that a plain LoRA (W x + alpha B A x on its target products) sets; any other field
# away from PEFT's default changes what PEFT computes (DoRA, ranks by module, extra trained modules, ...), which
# GenAI's adapter would not reproduce
PLAIN_LORA_FIELDS = frozenset(
    {"r", "lora_alpha", "lora_dropout", "target_modules", "use_rslora", "init_lora_weights"}
    | {"task_type", "base_model_name_or_path", "revision", "inference_mode", "peft_version"}
)
# the initialisations that leave the base weights as they are: PiSSA, OLoRA, CorDA, LoftQ and LoRA-GA change W
# when PEFT builds (and loads) the adapter, so PEFT computes with another W than the base model's export holds
PLAIN_INITIALISATIONS = (True, False, "gaussian")


def outside_openvino_targets(names: Iterable[str]) -> list[str]:
    """The adapted products among ``names`` that GenAI would not adapt, sorted."""
    return sorted(set(names) - set(OPENVINO_TARGETS))


def lora_adapter(model: torch.nn.Module) -> Any:
    """The current LoRA weights of ``model`` (a PEFT model) as a GenAI adapter: float32 tensors under PEFT's saved
    names, alpha = PEFT's scaling."""
    import openvino as ov
    import openvino_genai as genai
    from peft import get_peft_model_state_dict
    from peft.tuners.lora import LoraLayer
    from safetensors.torch import save

    name = model.active_adapter
    scalings = {m.scaling[name] for m in model.modules() if isinstance(m, LoraLayer) and name in m.scaling}
    if len(scalings) != 1:
        raise ValueError(f"one LoRA scaling expected for adapter {name!r}, found {sorted(scalings)}")
    state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in get_peft_model_state_dict(model).items()}
    blob = np.frombuffer(save(state), dtype=np.uint8).copy()  # GenAI reads the safetensors bytes in place
    return genai.AdapterConfig(genai.Adapter(ov.Tensor(blob)), float(scalings.pop()))


def saved_adapter(folder: Path) -> Any | None:
    """The LoRA adapter saved in generator folder ``folder`` as a GenAI adapter fused into the base model's
    weights when a pipeline is built (``MODE_FUSE``); None where GenAI would not compute what PEFT does: a target
    given as a pattern or outside :data:`OPENVINO_TARGETS`, a LoraConfig field outside :data:`PLAIN_LORA_FIELDS`
    away from its default, an initialisation that changes the base weights, weights not in safetensors. The caller
    then exports the merged model."""
    import openvino_genai as genai
    from peft import LoraConfig

    weights = folder / "adapter_model.safetensors"
    saved, default = LoraConfig.from_pretrained(str(folder)), LoraConfig()
    changed = {f.name for f in dataclasses.fields(LoraConfig) if getattr(saved, f.name) != getattr(default, f.name)}
    if changed - PLAIN_LORA_FIELDS or saved.init_lora_weights not in PLAIN_INITIALISATIONS or not weights.is_file():
        return None
    if not isinstance(saved.target_modules, (set, list, tuple)) or outside_openvino_targets(saved.target_modules):
        return None
    scaling = saved.lora_alpha / (math.sqrt(saved.r) if saved.use_rslora else saved.r)
    return genai.AdapterConfig(genai.Adapter(str(weights)), scaling, genai.AdapterConfig.Mode.MODE_FUSE)
