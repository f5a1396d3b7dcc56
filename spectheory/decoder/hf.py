"""Adapter: any Hugging Face causal language model as a model of the decoder's contract.

Needs ``transformers`` (``pip install "spectheory[hf]"``). Nothing is ever downloaded:
:meth:`HFCausalLM.from_pretrained` only opens local folders.

The cache of the adapter is the token history of each row; a cached call writes its ids
at ``start[b] ..`` and recomputes the logits from the stored history (one uncached forward
over the longest row, right padded). Causality makes the padding harmless: the logits at
position ``i`` depend on history positions ``<= i`` only. This is correct for any causal
LM whatever its cache layout, at the price of recomputing the prefix on every call.
"""
from __future__ import annotations

import os

import torch
from torch import nn

__all__ = ["HFCausalLM", "TokenHistory"]


class TokenHistory:
    """The adapter's cache: ``tokens`` LongTensor ``[batch_size, max_len]``."""

    def __init__(self, batch_size: int, max_len: int, device=None):
        self.tokens = torch.zeros(batch_size, max_len, dtype=torch.int64, device=device)

    @property
    def batch_size(self) -> int:
        return self.tokens.shape[0]

    @property
    def max_len(self) -> int:
        return self.tokens.shape[1]

    def __repr__(self):
        return f"TokenHistory(batch_size={self.batch_size}, max_len={self.max_len})"


def _config_value(config, *names):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


class HFCausalLM(nn.Module):
    """Wrap a ``transformers`` causal LM (``AutoModelForCausalLM``-like) into the model contract.

    Parameters
    ----------
    hf_model : transformers.PreTrainedModel
        Returns ``.logits [B, L, V']`` from ``hf_model(input_ids=ids)``.
    vocab_size : int, optional
        Logits are cut to the first ``vocab_size`` entries (default: the output embedding
        size, else ``config.vocab_size``). Use it to align a pair whose heads are padded
        differently.
    max_seq_len : int, optional
        Default ``config.max_position_embeddings`` or ``n_positions`` (``None`` if absent).

    Examples
    --------
    >>> import torch
    >>> from transformers import GPT2Config, GPT2LMHeadModel
    >>> lm = HFCausalLM(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=32)))
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> cache = lm.new_cache(1, 32)
    >>> _ = lm(ids[:, :3], cache=cache, start=torch.tensor([0]))
    >>> last = lm(ids[:, 3:], cache=cache, start=torch.tensor([3]))
    >>> lm.vocab_size, lm.max_seq_len, torch.allclose(last[0, 0], lm(ids)[0, 3], atol=1e-5)
    (40, 32, True)
    """

    def __init__(self, hf_model, vocab_size=None, max_seq_len=None):
        super().__init__()
        self.model = hf_model.eval()
        config = hf_model.config
        if vocab_size is None:
            head = hf_model.get_output_embeddings() if hasattr(hf_model, "get_output_embeddings") else None
            weight = getattr(head, "weight", None)
            vocab_size = int(weight.shape[0]) if weight is not None else _config_value(config, "vocab_size")
        if not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size: expected a positive int, got {vocab_size!r}")
        self.vocab_size = vocab_size
        self.max_seq_len = max_seq_len if max_seq_len is not None else _config_value(
            config, "max_position_embeddings", "n_positions", "n_ctx")

    @classmethod
    def from_pretrained(cls, path, device=None, dtype=None, vocab_size=None, max_seq_len=None, **kwargs):
        """Load ``AutoModelForCausalLM`` from a LOCAL folder (never downloads).

        Raises
        ------
        ValueError
            ``path`` is not an existing directory.
        """
        from transformers import AutoModelForCausalLM

        if not os.path.isdir(path):
            raise ValueError(f"path: {path!r} is not a local directory (nothing is downloaded)")
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **kwargs)
        if device is not None or dtype is not None:
            model = model.to(device=device, dtype=dtype)
        return cls(model, vocab_size=vocab_size, max_seq_len=max_seq_len)

    def new_cache(self, batch_size, max_len, device=None, dtype=None) -> TokenHistory:
        """A token history for ``batch_size`` rows of up to ``max_len`` positions (dtype unused)."""
        for name, value in (("batch_size", batch_size), ("max_len", max_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        if self.max_seq_len is not None and max_len > self.max_seq_len:
            raise ValueError(f"max_len: {max_len} exceeds max_seq_len = {self.max_seq_len}")
        if device is None:
            device = next(self.model.parameters()).device
        return TokenHistory(batch_size, max_len, device)

    def _logits(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits[..., : self.vocab_size]

    def forward(self, ids, cache: TokenHistory | None = None, start=None):
        """Logits ``[B, L, V]`` for ``ids [B, L]``; with a cache, rows start at ``start [B]``."""
        if ids.ndim != 2:
            raise ValueError(f"ids: expected shape [B, L], got {tuple(ids.shape)}")
        if cache is None:
            return self._logits(ids)
        B, L = ids.shape
        if start is None or start.shape != (B,) or B != cache.batch_size:
            raise ValueError("start: expected a LongTensor [B] matching ids and the cache batch")
        if int(start.min()) < 0 or int((start + L).max()) > cache.max_len:
            raise ValueError(f"start: positions must lie in [0, {cache.max_len}) for this cache")
        rows = torch.arange(B, device=ids.device)[:, None]
        pos = start[:, None] + torch.arange(L, device=ids.device)
        cache.tokens[rows, pos] = ids
        logits = self._logits(cache.tokens[:, : int((start + L).max())])
        return logits.gather(1, pos[..., None].expand(-1, -1, logits.shape[-1]))
