"""Repeated prompts prefilled once: a view of a GPT for the validation scripts.

The validation scripts run the decoder on many sequences that share a prompt (thousands of
two-token samples after one prompt; ``repeat_prompts`` cycling a few held-out windows). The
decoder's prefill then feeds the same ``L - 1`` tokens through the target once per row,
which is most of the work when few tokens are generated. :func:`shared_prefill` returns a
:class:`~spectheory.decoder.model.GPT` sharing the model's parameters whose cached calls
starting at position 0 (the prefill) run each *distinct* row once and copy its keys, values
and logits to the rows that repeat it:

.. math:: \\text{cache}[b, :L] = \\text{cache}_U[u(b), :L], \\quad
          \\text{logits}[b] = \\text{logits}_U[u(b)],

with ``U`` the distinct rows and ``u(b)`` the index of row ``b`` among them. A row's
result does not depend on the other rows of the batch except through float32 rounding: a
matrix product over ``U`` rows instead of ``B`` may block its sums differently. The logits,
caches and samples were bitwise equal in the lossless checks and ``compare_theory`` on the
shipped models; in ``simulations/decoder_trees.py`` the first-round predictions moved by at
most 3e-7 relative (no sample moved). The speed measurements do not use it.
"""

from __future__ import annotations

from typing import Any

import torch

from ..decoder.model import GPT, KVCache

__all__ = ["SharedPrefillGPT", "shared_prefill"]


class SharedPrefillGPT(GPT):
    """A :class:`~spectheory.decoder.model.GPT` whose prefill runs each distinct prompt once.

    Built by :func:`shared_prefill`; its modules (and so its parameters) are the wrapped
    model's own, so moving one moves both.
    """

    def __init__(self, model: GPT) -> None:
        torch.nn.Module.__init__(self)
        self.config = model.config
        self.wte, self.wpe, self.blocks, self.ln_f = model.wte, model.wpe, model.blocks, model.ln_f
        self.train(model.training)

    def forward(
        self,
        ids: torch.Tensor,
        cache: KVCache | None = None,
        start: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        return_hidden: bool = False,
    ) -> Any:
        """:meth:`GPT.forward`; a cached call with every ``start`` 0 and repeated rows of ``ids``
        runs the distinct rows on a cache of their own and copies the result to the repeats."""
        if (
            not isinstance(cache, KVCache)
            or positions is not None
            or attn_mask is not None
            or not isinstance(ids, torch.Tensor)
            or ids.dim() != 2
            or ids.shape[0] < 2
            or ids.shape[0] != cache.batch_size  # let the plain call raise its error
            or start is None
            or torch.as_tensor(start).shape != (ids.shape[0],)
            or bool(torch.as_tensor(start).any())
        ):
            return super().forward(ids, cache, start, positions, attn_mask, return_hidden)
        uniq, inverse = torch.unique(ids, dim=0, return_inverse=True)
        if uniq.shape[0] == ids.shape[0]:
            return super().forward(ids, cache, start, positions, attn_mask, return_hidden)
        U, L = uniq.shape
        small = self.empty_cache(U, cache.max_len, cache.k.device, cache.k.dtype)
        out = super().forward(
            uniq, small, torch.zeros(U, dtype=torch.long, device=ids.device), return_hidden=return_hidden
        )
        cache.k[:, :, :L] = small.k[:, inverse, :L]
        cache.v[:, :, :L] = small.v[:, inverse, :L]
        if return_hidden:
            logits, hidden = out
            return logits[inverse], hidden[inverse]
        return out[inverse]


def shared_prefill(model: Any) -> Any:
    """``model`` with repeated prompts prefilled once (:class:`SharedPrefillGPT`) if it is a
    :class:`~spectheory.decoder.model.GPT`; any other model unchanged.

    Parameters
    ----------
    model : model of the decoder contract

    Returns
    -------
    SharedPrefillGPT or the model itself
        The logits and caches of ``model`` (up to float32 rounding, see the module
        docstring), so the decoder's samples for the same seeds.

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> from spectheory.decoder.speculative import speculative_generate
    >>> target = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)).eval()
    >>> draft = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=8, block_size=32)).eval()
    >>> prompts = [[1, 2, 3, 4]] * 6
    >>> a = speculative_generate(target, draft, prompts, 3, 2, seed=5).tokens
    >>> b = speculative_generate(shared_prefill(target), shared_prefill(draft), prompts, 3, 2, seed=5).tokens
    >>> all((x == y).all() for x, y in zip(a, b))
    True
    """
    if isinstance(model, SharedPrefillGPT) or not isinstance(model, GPT):
        return model
    return SharedPrefillGPT(model)
