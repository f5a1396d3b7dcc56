r"""HuggingFace-style model stubs: check a whole sampler written against ``transformers`` models.

:func:`~spectheory.testing.check_sampler` hands a sampler two plain functions
``model(tokens) -> logits``. A sampler written for HuggingFace models calls
``model(input_ids [B, L], attention_mask=..., past_key_values=..., use_cache=...)`` and reads
``.logits [B, L, V]``; :class:`HFModelStub` is such a model over the kit's toy model (no
cache: ``past_key_values`` is accepted and returned as None, so a sampler must re-feed the
whole sequence, which every cache-less HF call does), and :func:`from_hf_sampler` adapts::

    fn(target_model, draft_model, input_ids [1, L] LongTensor, k) -> new tokens ([1, n] or [n])

to the kit, running ``rounds`` rounds a call, each from the context the previous ones left:
tokens after a short round come from the next one, so the kit's law checks (on the first
``k + 1`` tokens) reach state kept between rounds (a cache not updated with the last token).
Target calls are counted through the stub (``check_sampler(..., target_calls=N)``: ``N``
calls a round, ``rounds`` rounds a call). ``fn`` may take ``rng`` (the kit's numpy Generator)
as a keyword; torch draws are routed through the kit as everywhere. p = target, q = draft.

>>> import numpy as np
>>> from spectheory.testing.hf_models import HFModelStub
>>> from spectheory.testing.toy_models import ToyModel
>>> stub = HFModelStub(ToyModel(np.full((2, 3, 3), 1 / 3)))  # doctest: +SKIP
>>> stub(torch.tensor([[0, 1]])).logits.shape               # doctest: +SKIP
torch.Size([1, 2, 3])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from .._guards import check_int

__all__ = ["HFModelStub", "from_hf_sampler", "hf_style_round", "stale_context_round"]


class HFModelStub:
    """A causal LM with the HuggingFace call convention over a kit model ``model(tokens) -> logits``.

    ``stub(input_ids [B, L], attention_mask=None, past_key_values=None, use_cache=None, ...)``
    returns an object with ``.logits`` (a float32 tensor ``[B, L, V]``) and
    ``.past_key_values = None``. ``stub.calls`` counts calls; ``stub.config.vocab_size``,
    ``stub.device`` and ``stub.dtype`` are set as on a model.
    """

    def __init__(self, model: Callable[..., Any], vocab_size: int | None = None) -> None:
        import torch

        self.model = model
        self.calls = 0
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        V = (
            vocab_size
            if vocab_size is not None
            else getattr(getattr(model, "model", model), "vocab_size", None)
        )
        self.config = SimpleNamespace(vocab_size=V, is_encoder_decoder=False)

    def __call__(self, input_ids: Any = None, attention_mask: Any = None, **kwargs: Any) -> SimpleNamespace:
        import torch

        if input_ids is None:
            raise ValueError("input_ids: required (a [B, L] LongTensor)")
        ids = torch.as_tensor(input_ids)
        if ids.ndim != 2:
            raise ValueError(f"input_ids: expected shape [B, L], got {tuple(ids.shape)}")
        self.calls += 1
        logits = np.asarray(self.model(ids.detach().cpu().numpy().astype(np.int64)), dtype=np.float64)
        return SimpleNamespace(logits=torch.from_numpy(logits).to(torch.float32), past_key_values=None)

    forward = __call__


def from_hf_sampler(fn: Callable[..., Any], rounds: int = 1, name: str | None = None) -> Callable[..., Any]:
    """A kit sampler (:func:`~spectheory.testing.check_sampler`) running ``fn`` for ``rounds`` rounds.

    Parameters
    ----------
    fn : callable
        ``fn(target_model, draft_model, input_ids, k[, rng=]) -> new tokens`` over
        :class:`HFModelStub` models (module docstring).
    rounds : int
        Rounds per kit call, each continuing the sequence; declared as ``sampler.rounds``.
    name : str, optional

    Examples
    --------
    >>> from spectheory.testing import check_sampler
    >>> from spectheory.testing.hf_models import from_hf_sampler, hf_style_round   # doctest: +SKIP
    >>> check_sampler(from_hf_sampler(hf_style_round, rounds=2), n_samples=300).passed  # doctest: +SKIP
    True
    """
    import torch

    if not callable(fn):
        raise ValueError("fn: must be callable")
    rounds = check_int(rounds, "rounds", 1)
    try:
        takes_rng = "rng" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_rng = False

    def sampler(target_model, draft_model, prefix, k, rng):
        target, draft = HFModelStub(target_model), HFModelStub(draft_model)
        ids = torch.as_tensor(np.asarray(prefix, dtype=np.int64))[None, :]
        new: list[int] = []
        for _ in range(rounds):
            res = fn(target, draft, ids, k, rng=rng) if takes_rng else fn(target, draft, ids, k)
            row = torch.as_tensor(res).reshape(-1).to(torch.int64)
            if row.numel() == 0:
                raise ValueError("fn: returned no tokens (a round emits at least one)")
            new += row.tolist()
            ids = torch.cat([ids, row[None, :]], dim=1)
        return np.asarray(new, dtype=np.int64)

    sampler.rounds = rounds  # type: ignore[attr-defined]
    sampler.__name__ = str(name or getattr(fn, "__name__", type(fn).__name__))
    return sampler


def hf_style_round(target_model: Any, draft_model: Any, input_ids: Any, k: int) -> Any:
    """One round of speculative sampling written against HF models (a correct reference).

    Drafts ``k`` tokens from ``draft_model(ids).logits[:, -1]`` with ``torch.multinomial``,
    scores them with one target call, and verifies with the strict ``u < p/q`` rule; returns
    the new tokens ``[1, n+1]``.
    """
    import torch

    ids, q_rows = input_ids, []
    for _ in range(k):
        q = draft_model(ids).logits[:, -1].softmax(-1)
        x = torch.multinomial(q, 1)
        q_rows.append(q)
        ids = torch.cat([ids, x], dim=1)
    p = target_model(ids).logits[:, -(k + 1) :].softmax(-1)
    drafts = ids[0, -k:]
    for j in range(k):
        xj = int(drafts[j])
        qx, px = float(q_rows[j][0, xj]), float(p[0, j, xj])
        if not float(torch.rand(())) < (px / qx if qx > 0 else 0.0):
            res = torch.clamp(p[0, j] - q_rows[j][0], min=0)
            res = res / res.sum() if float(res.sum()) > 0 else p[0, j]
            return torch.cat([drafts[:j], torch.multinomial(res, 1)])[None, :]
    return torch.cat([drafts, torch.multinomial(p[0, k], 1)])[None, :]


def stale_context_round(target_model: Any, draft_model: Any, input_ids: Any, k: int) -> Any:
    """A gallery bug: :func:`hf_style_round` whose target call drops the context's last token.

    A cache cropped one token too far: from the second round on, the target scores the drafts
    after ``input_ids[:, :-1]`` (the last emitted token missing), so its laws are those of the
    wrong context. One round a call passes; ``from_hf_sampler(..., rounds=2)`` is flagged.
    """
    import torch

    L = input_ids.shape[1]

    def stale(ids: Any, **kwargs: Any) -> Any:
        if L > 1:
            ids = torch.cat([ids[:, : L - 1], ids[:, L:]], dim=1)
        return target_model(ids, **kwargs)

    return hf_style_round(stale, draft_model, input_ids, k)
