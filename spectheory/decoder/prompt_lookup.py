r"""Prompt lookup (n-gram retrieval) over token ids, as a draft model of the decoder's contract.

The draft proposes what followed an earlier occurrence of the text's last ``n`` tokens, in the
row's own prompt and output (Saxena's prompt lookup decoding; ``transformers``'
``prompt_lookup_num_tokens``). After the committed or drafted tokens ``h_0 .. h_p`` of a row,
the match length at an earlier position ``i < p`` is

.. math:: m(i) = \max\{n \le n_{\max} : h_{i-j} = h_{p-j},\ j = 0, \dots, n - 1\},

and the proposal is the token after the earliest of the longest matches,
``x = h_{i^* + 1}`` with ``i^* = \min \arg\max_{i < p} m(i)``, when ``m(i^*) >= n_{\min}``
(HF's search: n-gram sizes from ``max_ngram_size`` down, first window in the text). The
draft law is the **point mass** ``q = \delta_x`` (or, with ``smoothing = eps``,
``(1 - eps) \delta_x + eps / V``), the law the decoder samples the draft from and uses in the
ratio, so the rejection rule stays lossless: a point-mass draft is accepted with probability
``min(1, p(x) / q(x)) = p(x)`` and a rejection emits from ``(p - \delta_x)^+`` normalised, i.e.
``p`` conditioned on ``\ne x``. Without a match the law is uniform, and
:meth:`PromptLookupModel.proposal_cap` tells the decoder not to draft at all there: that round is
one plain target step, as in HF. A proposal continues through the tokens it drafted itself
(the match at ``i`` becomes a match at ``i + 1``); a round drafts ``min(num_pred_tokens,
p - i^*)`` tokens, HF's block (the continuation as far as the text goes).

The model has no weights; its cache is the token history (rollback is free). Any vocabulary:
``vocab_size=None`` adopts the target's when a decoder pairs them
(:func:`~spectheory.decoder.batching.check_common`). Load it by name with
``load_model("prompt-lookup")`` (options: ``"prompt-lookup:ngram=3,tokens=10"``).

Examples
--------
>>> import torch
>>> pl = PromptLookupModel(vocab_size=10, max_ngram_size=2, num_pred_tokens=4)
>>> ids = torch.tensor([[1, 2, 3, 4, 1, 2]])          # "1 2" occurred before, followed by 3
>>> int(pl(ids)[0, -1].argmax()), float(pl(ids)[0, -1].exp().max())
(3, 1.0)
>>> pl.proposal_cap(ids, torch.tensor([6]), torch.tensor([8])).tolist()  # at most num_pred_tokens
[4]
>>> pl.proposal_cap(ids, torch.tensor([4]), torch.tensor([8])).tolist()  # "4" never seen before
[0]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .._guards import check_int
from .batching import DecoderModel
from .call_checks import check_ids_start

if TYPE_CHECKING:
    from .tree_layout import TreeCall

__all__ = ["PromptLookupModel", "parse_prompt_lookup"]

#: The registered name (:func:`~spectheory.decoder.registry.load_model`).
NAME = "prompt-lookup"


class HistoryCache:
    """Token history ``[B, max_len]`` (int64); entries past a call's positions are stale."""

    def __init__(self, batch_size: int, max_len: int, device: Any) -> None:
        self.history = torch.zeros(batch_size, max_len, dtype=torch.long, device=device)
        self.batch_size, self.max_len = batch_size, max_len

    def __repr__(self) -> str:
        return f"HistoryCache(batch_size={self.batch_size}, max_len={self.max_len})"


def lookup(
    history: torch.Tensor, pos: torch.Tensor, max_ngram: int, min_ngram: int = 1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The prompt-lookup proposal after each position: ``(has [B, L] bool, token [B, L],
    match end i* [B, L])``.

    ``history [B, T]`` holds each row's tokens (positions ``<= pos`` are read), ``pos [B, L]``
    the query positions. Cost ``O(B L T max_ngram)``, all tensor operations.

    Examples
    --------
    >>> h = torch.tensor([[5, 6, 7, 5, 6, 0]])
    >>> has, tok, _ = lookup(h, torch.tensor([[2, 4]]), 2)
    >>> has.tolist(), tok[has].tolist()                 # after "5 6" (pos 4): 7
    ([[False, True]], [7])
    """
    B, T = history.shape
    idx = torch.arange(T, device=history.device)  # candidate match ends i
    run = idx[None, None, :] < pos[..., None]  # i < p: the continuation h[i + 1] is known
    m = torch.zeros(pos.shape + (T,), dtype=torch.int64, device=history.device)
    for j in range(max_ngram):
        q = history.gather(1, (pos - j).clamp(min=0))  # [B, L]
        h = history.roll(j, 1)  # h[:, i] = history[:, i - j]
        run = run & (h[:, None, :] == q[..., None]) & (idx >= j) & (pos[..., None] >= j)
        m += run
    score = torch.where(m >= min_ngram, m * (T + 1) + (T - idx), 0)
    best = score.argmax(-1)  # the longest match, earliest among equals
    has = score.gather(-1, best[..., None])[..., 0] > 0
    token = history.gather(1, (best + 1).clamp(max=T - 1))
    return has, token, best


class PromptLookupModel(DecoderModel, nn.Module):
    """Prompt-lookup draft (module docstring): a point-mass law on the continuation of the
    longest earlier n-gram match in the row's own tokens.

    Parameters
    ----------
    vocab_size : int or None
        The vocabulary; ``None`` adopts the target's in a decoder call (any vocabulary).
    max_ngram_size : int >= 1
        The longest n-gram matched (HF's ``max_matching_ngram_size``, default 2).
    num_pred_tokens : int >= 1
        At most this many tokens drafted per round (HF's ``prompt_lookup_num_tokens``); the
        decoder's ``gamma`` bounds it as well.
    min_ngram_size : int >= 1
        Shorter matches propose nothing.
    smoothing : float in [0, 1)
        ``q = (1 - eps) \\delta_x + eps / V``; 0 (default): the point mass.
    max_seq_len : int
        The longest history a cache holds.
    """

    def __init__(
        self,
        vocab_size: int | None = None,
        max_ngram_size: int = 2,
        num_pred_tokens: int = 10,
        min_ngram_size: int = 1,
        smoothing: float = 0.0,
        max_seq_len: int = 1 << 16,
    ) -> None:
        super().__init__()
        self.any_vocab = vocab_size is None
        self._vocab = None if vocab_size is None else check_int(vocab_size, "vocab_size", 1)
        self.max_ngram_size = check_int(max_ngram_size, "max_ngram_size", 1)
        self.min_ngram_size = check_int(min_ngram_size, "min_ngram_size", 1)
        if self.min_ngram_size > self.max_ngram_size:
            raise ValueError(f"min_ngram_size={min_ngram_size} exceeds max_ngram_size={max_ngram_size}")
        self.num_pred_tokens = check_int(num_pred_tokens, "num_pred_tokens", 1)
        if not (isinstance(smoothing, (int, float)) and 0.0 <= smoothing < 1.0):
            raise ValueError(f"smoothing: expected a float in [0, 1), got {smoothing!r}")
        self.smoothing = float(smoothing)
        self.max_seq_len = check_int(max_seq_len, "max_seq_len", 2)
        self.register_buffer("anchor", torch.zeros(0), persistent=False)  # moves with .to(device)

    @property
    def vocab_size(self) -> int | None:
        """The vocabulary (``None`` until a decoder call adopts the target's, for ``vocab_size=None``)."""
        return self._vocab

    def adopt_vocab(self, vocab_size: int) -> None:
        """Take the target's vocabulary (only for a model built with ``vocab_size=None``)."""
        if not self.any_vocab:
            raise ValueError("adopt_vocab: this model's vocabulary is fixed")
        self._vocab = check_int(vocab_size, "vocab_size", 1)

    def __repr__(self) -> str:
        return (
            f"PromptLookupModel(vocab_size={self._vocab}, max_ngram_size={self.max_ngram_size}, "
            f"num_pred_tokens={self.num_pred_tokens})"
        )

    # -------------------------------------------------------------- the model interface
    def empty_cache(self, batch_size: int, max_len: int, device: Any, dtype: Any) -> HistoryCache:
        """A history cache (``dtype`` is not read: it holds tokens)."""
        return HistoryCache(batch_size, max_len, device if device is not None else self.anchor.device)

    def _vocab_or_raise(self) -> int:
        if self._vocab is None:
            raise ValueError("vocab_size: unset; pass vocab_size= or pair the model with a target")
        return self._vocab

    def forward(
        self, ids: torch.Tensor, cache: HistoryCache | None = None, start: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``[B, L, V]`` (log-probabilities of the draft law) after each position."""
        V = self._vocab_or_raise()
        cache_batch = cache.batch_size if cache is not None else None
        cache_len = cache.max_len if cache is not None else None
        pos = check_ids_start(ids, cache, start, self.max_seq_len, cache_batch, cache_len)
        ids = ids.long()
        if cache is None or pos is None:
            history = ids
            pos = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        else:
            rows = torch.arange(ids.shape[0], device=ids.device)[:, None]
            cache.history[rows, pos] = ids
            history = cache.history
        has, token, _ = lookup(history, pos, self.max_ngram_size, self.min_ngram_size)
        eps = self.smoothing
        low = -math.inf if eps == 0.0 else math.log(eps / V)
        high = 0.0 if eps == 0.0 else math.log(1.0 - eps + eps / V)
        out = torch.full(ids.shape + (V,), low, dtype=torch.float32, device=ids.device)
        out.scatter_(2, token[..., None], high)
        return torch.where(has[..., None], out, torch.zeros((), device=ids.device))

    def proposal_cap(self, tokens: torch.Tensor, seq_len: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """The draft length a round may use per row where the text ``tokens[b, :seq_len[b]]``
        ends in a match at ``i*``: ``min(k, num_pred_tokens, p - i*)`` with ``p = seq_len - 1``
        (HF's block: the continuation as far as the text goes), else 0 (the decoder then plays a
        plain target step). Once the first token matched, every later one does (the match moves
        along), so the draft can always fill the cap."""
        p = (seq_len - 1)[:, None]
        has, _, best = lookup(tokens, p, self.max_ngram_size, self.min_ngram_size)
        cap = torch.minimum(k.clamp(max=self.num_pred_tokens), (p - best)[:, 0])
        return torch.where(has[:, 0], cap, torch.zeros_like(k))

    def score_tree(self, cache: Any, call: TreeCall, return_hidden: bool) -> None:
        """``None``: a tree is scored by recomputing its paths (the law needs the whole history)."""
        return None


def parse_prompt_lookup(name: str) -> PromptLookupModel:
    """``"prompt-lookup"`` or ``"prompt-lookup:ngram=3,tokens=10,min=1,smoothing=0.0"`` as a model.

    Examples
    --------
    >>> parse_prompt_lookup("prompt-lookup:ngram=3,tokens=5")
    PromptLookupModel(vocab_size=None, max_ngram_size=3, num_pred_tokens=5)
    """
    base, _, opts = name.partition(":")
    if base != NAME:
        raise ValueError(f"name: expected {NAME!r} with options, got {name!r}")
    keys = {"ngram": "max_ngram_size", "tokens": "num_pred_tokens", "min": "min_ngram_size"}
    kwargs: dict[str, Any] = {}
    for item in filter(None, opts.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in (*keys, "smoothing", "vocab"):
            raise ValueError(
                f"{name!r}: options are ngram=, tokens=, min=, smoothing=, vocab= (e.g. "
                f"'prompt-lookup:ngram=3,tokens=10'), got {item!r}"
            )
        try:
            if key == "smoothing":
                kwargs["smoothing"] = float(value)
            else:
                kwargs[keys.get(key, "vocab_size")] = int(value)
        except ValueError:
            raise ValueError(f"{name!r}: option {key} needs a number, got {value!r}") from None
    return PromptLookupModel(**kwargs)
