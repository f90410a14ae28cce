"""The OpenVINO encoder follows its weights whatever changes them, and a training job's in-run dev scores are the
scores of the weights at each evaluation, under either engine (the stale compiled model of issue 40: a fused AdamW
step moved neither the parameters' storage nor their version counter, and every evaluation after the first scored
the first one's weights)."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from hardcse import engines
from hardcse.encoder import openvino as ov_encoder
from hardcse.encoder.encode import encode
from hardcse.engines import Engine

pytestmark = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")

SENTENCES = ["a man plays a guitar", "two dogs run", "the child reads a long book in the garden", "hi"]


def embeddings(model: SentenceTransformer, engine: str) -> np.ndarray:
    return encode(model, SENTENCES, engine=Engine(engine, "float32"))


def assert_openvino_follows(model: SentenceTransformer, change) -> None:
    """Encode under OpenVINO (compiling the weights as they are), ``change(model)``, and check that the weights did
    change and that OpenVINO's embeddings are PyTorch's for the new weights."""
    before = embeddings(model, "openvino")
    np.testing.assert_allclose(before, embeddings(model, "torch"), atol=1e-5)
    change(model)
    after = embeddings(model, "torch")
    assert np.abs(after - before).max() > 1e-3, "the change did not move the embeddings"
    np.testing.assert_allclose(embeddings(model, "openvino"), after, atol=1e-5)


def adamw_step(**kind):
    def change(model: SentenceTransformer) -> None:
        params = list(model.parameters())
        torch.manual_seed(3)
        for p in params:
            p.grad = torch.randn_like(p)
        torch.optim.AdamW(params, lr=1e-2, **kind).step()

    return change


@pytest.mark.parametrize(
    "kind", [{"fused": True}, {"foreach": True}, {"foreach": False}], ids=["fused", "foreach", "for-loop"]
)
def test_an_optimizer_step_of_any_kind_is_followed(tiny_encoder, kind):
    p = next(tiny_encoder.parameters())
    version, pointer = p._version, p.data_ptr()
    assert_openvino_follows(tiny_encoder, adamw_step(**kind))
    if kind.get("fused"):  # why a key of pointers and version counters could not see it
        assert (p._version, p.data_ptr()) == (version, pointer)


def test_load_state_dict_is_followed(tiny_encoder):
    torch.manual_seed(5)
    weights = tiny_encoder.state_dict()
    other = {k: v + 0.1 * torch.randn_like(v) if v.is_floating_point() else v for k, v in weights.items()}
    assert_openvino_follows(tiny_encoder, lambda model: model.load_state_dict(other))


def test_writes_under_no_grad_and_through_data_are_followed(tiny_encoder):
    def in_place(model: SentenceTransformer) -> None:
        with torch.no_grad():
            model[0].auto_model.embeddings.word_embeddings.weight.mul_(1.5)

    def through_data(model: SentenceTransformer) -> None:  # `.data` has a version counter of its own
        layer = model[0].auto_model.encoder.layer[0].output.dense
        layer.weight.data *= 3.0

    def reassigned(model: SentenceTransformer) -> None:
        layer = model[0].auto_model.encoder.layer[1].output.dense
        layer.weight = torch.nn.Parameter(layer.weight.detach() * -1.0)

    for change in (in_place, through_data, reassigned):
        assert_openvino_follows(tiny_encoder, change)


def test_a_lora_merge_is_followed(tiny_encoder):
    from peft import LoraConfig, get_peft_model

    def merge_lora(model: SentenceTransformer) -> None:
        torch.manual_seed(2)
        config = LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], init_lora_weights=False)
        peft_model = get_peft_model(model[0].auto_model, config)
        merged = peft_model.merge_and_unload()
        assert merged is model[0].auto_model  # merged in place: the same module object, new weights

    assert_openvino_follows(tiny_encoder, merge_lora)


def test_a_model_trained_in_another_process_is_followed(tiny_encoder_dir):
    first = SentenceTransformer(str(tiny_encoder_dir), device="cpu")
    before = embeddings(first, "openvino")
    script = (
        "import sys, torch; from sentence_transformers import SentenceTransformer\n"
        "m = SentenceTransformer(sys.argv[1], device='cpu')\n"
        "with torch.no_grad():\n    [p.mul_(0.7) for p in m.parameters()]\n"
        "m.save(sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tiny_encoder_dir)], check=True)
    second = SentenceTransformer(str(tiny_encoder_dir), device="cpu")
    after = embeddings(second, "torch")
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_allclose(embeddings(second, "openvino"), after, atol=1e-5)


def test_weights_seen_before_reuse_their_compiled_model(tiny_encoder, monkeypatch):
    conversions = []
    compile_model = ov_encoder._compile
    monkeypatch.setattr(ov_encoder, "_compiled", type(ov_encoder._compiled)())
    monkeypatch.setattr(ov_encoder, "_compile", lambda *a: conversions.append(1) or compile_model(*a))
    saved = {k: v.clone() for k, v in tiny_encoder.state_dict().items()}
    embeddings(tiny_encoder, "openvino")
    embeddings(tiny_encoder, "openvino")
    assert len(conversions) == 1
    adamw_step(fused=True)(tiny_encoder)
    embeddings(tiny_encoder, "openvino")
    assert len(conversions) == 2
    tiny_encoder.load_state_dict(saved)  # back to the first weights (the best checkpoint reloaded, say)
    embeddings(tiny_encoder, "openvino")
    assert len(conversions) == 2
    assert ov_encoder.weights_digest(tiny_encoder[0].auto_model) == ov_encoder.weights_digest(
        SentenceTransformer(modules=list(tiny_encoder), device="cpu")[0].auto_model
    )


@pytest.mark.parametrize("precision", ["float32", "auto"])
def test_in_run_dev_scores_are_the_scores_of_each_evaluated_checkpoint_under_both_engines(
    tiny_bert_dir, triplet_file, tmp_path, precision
):
    """The real path: ``run_training_job`` with the trainer's default optimizer (fused AdamW), a learning rate that
    moves the weights, an evaluation every step. Each in-run dev score equals a fresh evaluation of the weights it
    was computed on (copied at every evaluation), and the engines pick the same best step."""
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import TrainerCallback

    from hardcse.data.sts import DEV_TASK, load_sts_task
    from hardcse.data.triplets import read_triplets
    from hardcse.encoder.contrastive import InBatchContrastiveLoss
    from hardcse.encoder.simcse import simcse_dataset
    from hardcse.evaluation.sts import dev_evaluator, evaluate_sts
    from hardcse.training import TrainingSettings, run_training_job

    class CopyWeightsAtEvaluation(TrainerCallback):
        def __init__(self) -> None:
            self.weights: list[dict] = []

        def on_evaluate(self, args, state, control, model=None, **kw) -> None:
            self.weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    dev = load_sts_task(DEV_TASK)
    dataset = simcse_dataset("sup", read_triplets(triplet_file))
    settings = TrainingSettings(max_steps=4, batch_size=4, learning_rate=5e-3, eval_steps=1, seed=1)

    def fresh_model() -> SentenceTransformer:
        torch.manual_seed(0)
        return SentenceTransformer(modules=[Transformer(str(tiny_bert_dir), max_seq_length=64), Pooling(32)])

    runs = {}
    for engine in ("torch", "openvino"):
        chosen = Engine(engine, precision)
        copies = CopyWeightsAtEvaluation()
        model = fresh_model()
        outcome = run_training_job(
            model,
            dataset,
            InBatchContrastiveLoss(model, 0.05),
            settings,
            tmp_path / engine,
            evaluator=dev_evaluator(model.max_seq_length, chosen),
            callbacks=[copies],
        )
        history = [e["dev"] for e in outcome.record["dev_history"]]
        assert len(history) == len(copies.weights) == 4
        fresh = []
        for weights in copies.weights:
            checkpoint = fresh_model()
            checkpoint.load_state_dict(weights)
            fresh.append(evaluate_sts(checkpoint, [dev], show_progress=False, engine=chosen).scores[dev.name])
        # float32: the same numbers; auto (bfloat16 where the CPU has it): within its rounding
        np.testing.assert_allclose(history, fresh, atol=1e-6 if precision == "float32" else 0.5)
        assert len(set(np.round(history, 2))) == 4, "the weights did not move enough to tell the steps apart"
        saved = json.loads((tmp_path / engine / "training.json").read_text())
        runs[engine] = (saved["best_step"], history)
    (torch_best, torch_history), (ov_best, ov_history) = runs["torch"], runs["openvino"]
    assert ov_best == torch_best
    np.testing.assert_allclose(ov_history, torch_history, atol=0.01 if precision == "float32" else 0.5)
