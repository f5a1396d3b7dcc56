"""Tiny random-weight GPTs shared by the decoder and validation tests (torch only)."""

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
