"""Fixed-shape, compiled forwards for the decoder: ``torch.compile`` and CUDA graphs (issue 22).

:func:`compile_model` wraps a :class:`~spectheory.decoder.model.GPT` in a model of the decoder
contract (:mod:`spectheory.decoder.batching`) whose cached calls run
:meth:`~spectheory.decoder.model.GPT.static_forward`: attention over the whole cache under a
causal mask, so a call's shapes depend only on ``(B, L)`` and the forward reads nothing back
from the device. That is what ``torch.compile`` needs to compile each shape once, and what a
CUDA graph needs to be replayed. Any decoder function takes the wrapped models as they are::

    target = compile_model(load_model("target", device="cuda"), mode="reduce-overhead")
    draft = compile_model(load_model("draft-small", device="cuda"), mode="reduce-overhead")
    speculative_generate(target, draft, prompts, 128, gamma=4)

Modes: ``"static"`` (the fixed-shape forward, not compiled: for checks), ``"default"``
(``torch.compile``, CPU or CUDA), ``"reduce-overhead"`` (``torch.compile`` with CUDA graphs on
CUDA; the caches are marked as static addresses so the graphs write them in place, as gpt-fast
does), ``"max-autotune"``. A speculative round calls a model with a few distinct ``L`` (one
token per draft step, the window after a round, ``gamma + 1`` for the target), so a decode
compiles a handful of graphs on its first rounds (seconds each on CPU) and replays them after.
Tree rounds (:func:`~spectheory.decoder.tree_decode.tree_generate`) take the same path: the
tree's mask spans the whole cache, so a tree call's shapes depend only on ``(B, L)`` too.
Uncached calls (``model(ids)``) and calls that return hidden states run the eager forward.

The outputs are the eager model's up to the order of floating-point sums (masked slots add exact
zeros); the tests check greedy decoding token for token and losslessness by a chi-square test
on the compiled path.
"""

from __future__ import annotations

from typing import Any

import torch

from .batching import DecoderModel
from .model import GPT, KVCache
from .tree_layout import TreeCall, masked_tree_call

__all__ = ["COMPILE_MODES", "FORWARD_MODES", "CompiledLM", "compile_model", "with_forward"]

#: The modes of :func:`compile_model`.
COMPILE_MODES = ("static", "default", "reduce-overhead", "max-autotune")
#: The forward modes of :func:`with_forward`: ``"eager"`` (the model as it is) and :data:`COMPILE_MODES`.
FORWARD_MODES = ("eager", *COMPILE_MODES)
#: ``torch._dynamo.config.recompile_limit`` is raised to at least this when a model is compiled:
#: the graphs of every wrapped model and shape are graphs of one function (default limit 8).
RECOMPILE_LIMIT = 64


class CompiledLM(DecoderModel, torch.nn.Module):
    """A :class:`~spectheory.decoder.model.GPT` whose cached calls are fixed-shape and compiled.

    Parameters
    ----------
    model : GPT
    mode : one of :data:`COMPILE_MODES`

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> gpt = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)).eval()
    >>> m = compile_model(gpt, mode="static")
    >>> cache = m.new_cache(1, 16)
    >>> ids = torch.tensor([[104, 105, 33]])
    >>> with torch.inference_mode():
    ...     out = m(ids, cache=cache, start=torch.tensor([0]))
    ...     ref = gpt(ids)
    >>> bool(torch.allclose(out, ref, atol=1e-5)), m.vocab_size
    (True, 256)
    """

    def __init__(self, model: GPT, mode: str = "default") -> None:
        super().__init__()
        if not isinstance(model, GPT):
            raise ValueError(
                f"model: compile_model takes a spectheory GPT (a shipped or trained one), got {type(model).__name__}"
            )
        if mode not in COMPILE_MODES:
            raise ValueError(f"mode: expected one of {COMPILE_MODES}, got {mode!r}")
        self.model, self.mode = model, mode
        self.vocab_size, self.max_seq_len = model.vocab_size, model.max_seq_len
        if mode == "static":
            self._step: Any = model.static_forward
        else:
            compile_mode = None if mode == "default" else mode
            # every wrapped model and every (B, L) is one graph of the same function, GPT.static_forward
            limits = torch._dynamo.config
            limits.recompile_limit = max(limits.recompile_limit, RECOMPILE_LIMIT)
            self._step = torch.compile(model.static_forward, fullgraph=True, mode=compile_mode)

    def empty_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype | None
    ) -> KVCache:
        """The wrapped model's cache, pinned (:meth:`pin`); also its tree cache."""
        return self.pin(self.model.empty_cache(batch_size, max_len, device, dtype))

    def pin(self, cache: KVCache) -> KVCache:
        """``cache`` with its tensors marked as static addresses under CUDA graphs (so a graph
        writes them in place); as it is in the other modes."""
        if self.mode == "reduce-overhead":
            torch._dynamo.mark_static_address(cache.k)
            torch._dynamo.mark_static_address(cache.v)
        return cache

    # ------------------------------------------ tree attention (decoder.tree_attention's contract)
    supports_tree_cache = True

    def score_tree(self, cache: KVCache | None, call: TreeCall, return_hidden: bool) -> Any:
        """As :meth:`GPT.score_tree`, with the mask over the whole cache: the fixed-shape path
        (no host read); ``None`` without a cache."""
        if cache is None:
            return None
        return masked_tree_call(self, cache, call, cache.max_len, return_hidden)

    def forward(
        self,
        ids: torch.Tensor,
        cache: KVCache | None = None,
        start: torch.Tensor | None = None,
        **options: Any,
    ) -> Any:
        """Logits ``[B, L, V]``: cached calls through the fixed-shape forward, others eager.

        ``options`` are :meth:`GPT.forward`'s (``positions``, ``attn_mask``, ``return_hidden``).
        A tree-attention call (``positions [B, L]`` and ``attn_mask [B, L, T]``) takes the
        fixed-shape path too when the mask spans the whole cache (``T = cache.max_len``, as
        :meth:`score_tree` builds it);
        ``return_hidden`` and uncached calls run the eager forward.
        """
        if options.keys() - {"positions", "attn_mask", "return_hidden"}:
            raise TypeError(f"forward: unexpected options {sorted(options)} (GPT.forward's are taken)")
        positions, attn_mask = options.get("positions"), options.get("attn_mask")
        tree = positions is not None or attn_mask is not None
        full_mask = attn_mask is not None and cache is not None and attn_mask.shape[-1] == cache.max_len
        if cache is None or start is None or options.get("return_hidden") or (tree and not full_mask):
            return self.model(ids, cache=cache, start=start, **options)
        start = torch.as_tensor(start, device=ids.device).long()
        if tree:
            out = self._step(ids, cache.k, cache.v, start, positions, attn_mask)
        else:
            out = self._step(ids, cache.k, cache.v, start)
        return out.clone() if self.mode == "reduce-overhead" else out  # a graph reuses its output

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}"


def compile_model(model: GPT, mode: str = "default") -> CompiledLM:
    """Wrap ``model`` so the decoder's cached calls are fixed-shape and compiled (module docstring).

    Parameters
    ----------
    model : GPT, e.g. ``load_model("target")``
    mode : ``"static"``, ``"default"``, ``"reduce-overhead"`` (CUDA graphs) or ``"max-autotune"``

    Returns
    -------
    CompiledLM, a model of the decoder contract
    """
    return CompiledLM(model, mode)


def with_forward(model: Any, mode: str = "eager") -> Any:
    """``model`` with its forwards in ``mode`` (:data:`FORWARD_MODES`): as it is for ``"eager"``
    and for models that are not a shipped GPT (n-gram drafts, Hugging Face models), else
    :func:`compile_model` of it. What ``spectheory decode --forward`` and the GPU benchmarks use.

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> gpt = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32))
    >>> with_forward(gpt) is gpt, type(with_forward(gpt, "static")).__name__
    (True, 'CompiledLM')
    """
    if mode not in FORWARD_MODES:
        raise ValueError(f"mode: expected one of {FORWARD_MODES}, got {mode!r}")
    return model if mode == "eager" or not isinstance(model, GPT) else compile_model(model, mode)
