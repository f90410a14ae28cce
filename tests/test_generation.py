"""The generator's decoding: shared prompt prefixes, the hand-written sampling loop, cut-off answers."""

import pytest
import torch

from hardcse.art.config import GeneratorConfig, RLConfig
from hardcse.art.generator.model import load_generator
from hardcse.art.generator.parsing import parse_response
from hardcse.art.generator.prefix import encode_prompts
from hardcse.art.generator.sampling import decoder_and_head, sample
from hardcse.art.rl.loop import RLTrainer

GREEDY = GeneratorConfig(max_new_tokens=6, top_k=1, dtype="float32", device="cpu")  # exact CPU values
PROMPTS = ["the cat runs", "the cat sleeps very", "the", "a dog", "a dog runs good", "a dog sleeps"]
GROUPS = [0, 0, 0, 1, 1, 1]


@pytest.fixture(scope="module")
def lm(tiny_lm_dir):
    return load_generator(str(tiny_lm_dir), GREEDY)


def test_prompts_split_at_the_longest_shared_prefix_of_their_group(lm):
    _, tokenizer = lm
    batch = encode_prompts(tokenizer, PROMPTS, GROUPS)
    ids = tokenizer(PROMPTS, add_special_tokens=False)["input_ids"]
    assert [batch.prompt_ids(i) for i in range(len(PROMPTS))] == ids
    # group 0 shares "the" (one token: "the" alone must keep its last token as suffix, so nothing);
    # group 1 shares "a dog" up to one token short of the shortest prompt: "a"
    assert batch.prefix_mask.sum(dim=1).tolist() == [0, 1]
    assert batch.suffix_mask.sum(dim=1).min() >= 1
    same = encode_prompts(tokenizer, ["a dog runs"] * 3)  # GRPO's repeated prompt: all but its last token shared
    assert same.prefix_mask.sum().item() == 2 and same.suffix_mask.sum(dim=1).tolist() == [1, 1, 1]
    sub = batch.select(torch.tensor([3, 5]))
    assert [sub.prompt_ids(0), sub.prompt_ids(1)] == [ids[3], ids[5]]


def test_greedy_sampling_is_generate_with_left_padding(lm):
    model, tokenizer = lm
    samples = sample(model, tokenizer, PROMPTS, GREEDY, groups=GROUPS)
    encoded = tokenizer(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    out = model.generate(**encoded, do_sample=False, max_new_tokens=6, pad_token_id=tokenizer.pad_token_id)
    expected = out[:, encoded["input_ids"].shape[1] :]
    for i in range(len(PROMPTS)):
        n = int(samples.response_mask[i].sum())
        assert samples.response_ids[i, :n].tolist() == expected[i, :n].tolist()
        ended = tokenizer.eos_token_id in expected[i].tolist()
        assert samples.truncated[i] == (not ended)


def test_the_prefix_forward_gives_each_rows_own_log_probs(lm, tiny_lm_dir):
    model, tokenizer = load_generator(
        str(tiny_lm_dir), GeneratorConfig(dtype="float32", max_new_tokens=5, device="cpu"), trainable=True
    )
    generation = GeneratorConfig(dtype="float32", max_new_tokens=5, device="cpu")
    trainer = RLTrainer(model, tokenizer, generation, RLConfig())
    torch.manual_seed(0)
    samples = sample(model, tokenizer, PROMPTS, generation, groups=GROUPS)
    with torch.no_grad():
        logprobs = trainer.forward(samples)[0]
        for i in range(len(PROMPTS)):  # one row alone, no padding, no prefix cache
            n = int(samples.response_mask[i].sum())
            ids = torch.tensor([samples.prompts.prompt_ids(i) + samples.response_ids[i, :n].tolist()])
            logits = model(ids).logits[0, -n - 1 : -1].float().log_softmax(-1)
            alone = logits.gather(1, samples.response_ids[i, :n].unsqueeze(1)).squeeze(1)
            assert torch.allclose(logprobs[i, :n], alone, atol=1e-5)
    decoder, head = decoder_and_head(model)
    assert head is model.get_base_model().get_output_embeddings()


def test_gradient_checkpointing_recomputes_layers_and_changes_no_number(tiny_lm_dir):
    config = GeneratorConfig(dtype="float32", max_new_tokens=5, device="cpu")
    results = []
    for checkpointing in (False, True):
        torch.manual_seed(0)  # the same LoRA A matrices
        model, tokenizer = load_generator(str(tiny_lm_dir), config, trainable=True)
        trainer = RLTrainer(model, tokenizer, config, RLConfig(gradient_checkpointing=checkpointing))
        torch.manual_seed(0)
        samples = sample(model, tokenizer, PROMPTS, config, groups=GROUPS)
        with torch.no_grad():
            no_grad = trainer.forward(samples)[0]
        saved: list[int] = []  # the elements autograd keeps for the backward pass
        with torch.autograd.graph.saved_tensors_hooks(lambda t, kept=saved: kept.append(t.numel()) or t, lambda t: t):
            logprobs = trainer.forward(samples)[0]
        (logprobs * samples.response_mask).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        assert not model.training  # back in eval mode for sampling
        results.append((samples.response_ids, no_grad, logprobs.detach(), grads, sum(saved)))
    (ids_a, no_grad_a, lp_a, grads_a, saved_a), (ids_b, no_grad_b, lp_b, grads_b, saved_b) = results
    # checkpointed layers keep only their inputs (recomputed in the backward pass), though every row runs its
    # whole prompt instead of continuing a shared prefix
    assert saved_b < saved_a / 2
    assert torch.equal(ids_a, ids_b)
    assert torch.allclose(no_grad_a, no_grad_b, atol=1e-5) and torch.allclose(lp_a, lp_b, atol=1e-5)
    assert torch.equal(no_grad_b, lp_b)  # pi_old and pi: the same forward with checkpointing on
    assert any(g.abs().sum() > 0 for g in grads_a.values())
    for name, grad in grads_a.items():
        assert torch.allclose(grad, grads_b[name], atol=1e-5), name


def test_a_cut_off_answer_is_rejected_with_its_reason():
    assert parse_response("A man plays the guitar", "A man plays a guitar.", truncated=True).reason == "cut_off"
    assert parse_response("A man plays the guitar.", "A man plays a guitar.").ok
