"""Tiny random-weight models shared by the decoder, tuning and validation tests: the package's GPT
(torch only) and Hugging Face models saved to a folder (transformers, imported when used)."""

import torch

from spectheory.decoder.model import GPT, GPTConfig


def gpt(seed: int, n_layer: int = 1, n_embd: int = 16, vocab: int = 256, scale: float = 1.0) -> GPT:
    """A GPT whose weights depend only on ``seed`` (torch's global RNG is restored after)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        m = GPT(GPTConfig(n_layer=n_layer, n_head=2, n_embd=n_embd, block_size=64, vocab_size=vocab)).eval()
    with torch.no_grad():
        m.wte.weight.mul_(scale)
    return m


#: vocabulary of the tiny Hugging Face models
VOCAB = 48


def save_tiny(tmp_path, name, arch="gpt2", seed=0):
    """Random tiny causal LM saved with save_pretrained; returns its folder."""
    import transformers

    if arch == "gpt2":
        config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=64)
        cls = transformers.GPT2LMHeadModel
    else:
        config = transformers.LlamaConfig(
            num_hidden_layers=1,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=2,
            num_key_value_heads=1,
            vocab_size=VOCAB,
            max_position_embeddings=64,
        )
        cls = transformers.LlamaForCausalLM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
        with torch.no_grad():  # sharpen the random laws so that greedy has clear winners
            model.get_output_embeddings().weight.mul_(20.0)
    folder = tmp_path / name
    model.save_pretrained(folder)
    return str(folder)


def tiny_hf_pair(tmp_path):
    """``(target, draft)``: a GPT-2 and a Llama of :func:`save_tiny`, as float64
    :class:`~spectheory.decoder.HFCausalLM` (the adapter of HF models)."""
    from spectheory.decoder import HFCausalLM

    target = HFCausalLM.from_pretrained(save_tiny(tmp_path, "target", "gpt2", seed=0), dtype=torch.float64)
    draft = HFCausalLM.from_pretrained(save_tiny(tmp_path, "draft", "llama", seed=1), dtype=torch.float64)
    return target, draft
