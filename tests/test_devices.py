"""Devices: the config syntax, what each value resolves to (with and without GPUs), bfloat16 where native, and the
generator and the RL tensors on the device they were asked for. The GPU paths themselves: tests/test_cuda.py."""

import dataclasses

import pytest
import torch

from hardcse.art.config import GeneratorConfig, TuneConfig
from hardcse.art.generator.model import load_generator
from hardcse.config import ConfigValueError
from hardcse.devices import check_config_devices, resolve_device, resolve_dtype
from hardcse.errors import HardcseError
from hardcse.training import TrainingSettings


@pytest.mark.parametrize("value", ["gpu", "cuda:", "cuda:x", "CPU", "cuda0", ""])
def test_a_device_is_auto_cpu_cuda_or_cuda_n(value):
    with pytest.raises(ConfigValueError, match="give auto, cpu, cuda or cuda:N"):
        GeneratorConfig(device=value)
    with pytest.raises(ConfigValueError, match="device: "):
        TrainingSettings(device=value)


def test_one_training_process_trains_on_the_first_visible_gpu():
    TrainingSettings(device="cuda:0")
    with pytest.raises(ConfigValueError, match="device: cuda:1: .* CUDA_VISIBLE_DEVICES=1 and device: cuda$"):
        TrainingSettings(device="cuda:1")


@pytest.fixture
def two_gpus(monkeypatch):
    """torch.cuda as on a machine with two GPUs (nothing is run on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


def test_devices_resolve_to_the_processs_own_gpu(two_gpus, monkeypatch):
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setenv("LOCAL_RANK", "1")  # the second process of `accelerate launch`
    assert resolve_device("auto") == torch.device("cuda", 1)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)  # named: kept
    with pytest.raises(HardcseError, match=r"generator.device: cuda:2: this machine has 2 CUDA GPU\(s\), cuda:0 to"):
        resolve_device("cuda:2", "generator.device")


def test_without_a_gpu_auto_is_the_cpu_and_a_named_gpu_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(HardcseError, match="training.device: cuda: torch sees no CUDA GPU on this machine; set tr"):
        resolve_device("cuda", "training.device")
    config = TuneConfig(generator=GeneratorConfig(device="cuda:0"))
    with pytest.raises(HardcseError, match="^generator.device: cuda:0"):  # nested keys by their path
        check_config_devices(config)
    check_config_devices(TuneConfig())  # auto everywhere: fine


def test_auto_dtype_is_bfloat16_only_where_the_device_computes_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (8, 0))  # an A100
    assert resolve_dtype("auto", torch.device("cuda", 0)) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (7, 0))  # a V100: emulated bf16 only
    assert resolve_dtype("auto", torch.device("cuda", 0)) == torch.float32
    assert resolve_dtype("float32", torch.device("cuda", 0)) == torch.float32
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, name, lambda: False)
    assert resolve_dtype("auto", torch.device("cpu")) == torch.float32


def test_the_generator_loads_on_its_device_with_lora_in_float32(tiny_lm_dir):
    model, _ = load_generator(str(tiny_lm_dir), GeneratorConfig(device="cpu", dtype="bfloat16"), trainable=True)
    params = dict(model.named_parameters())
    assert {p.device for p in params.values()} == {torch.device("cpu")}
    assert {p.dtype for n, p in params.items() if "lora_" in n} == {torch.float32}
    assert {p.dtype for n, p in params.items() if "lora_" not in n} == {torch.bfloat16}


def test_a_run_begun_before_a_key_existed_resumes_with_its_default(tmp_path):
    import yaml

    from hardcse.config import config_to_dict
    from hardcse.encoder.simcse import SimCSEConfig
    from hardcse.run_folder import RunFolder

    saved = config_to_dict(SimCSEConfig())
    del saved["training"]["device"]  # as an older hardcse wrote it
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    RunFolder(tmp_path, SimCSEConfig(), resume=True).check()
    training = dataclasses.replace(SimCSEConfig().training, device="cpu")
    with pytest.raises(HardcseError, match="differs from .* in training.device"):
        RunFolder(tmp_path, dataclasses.replace(SimCSEConfig(), training=training), resume=True).check()
