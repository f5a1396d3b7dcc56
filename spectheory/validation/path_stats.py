"""Token paths of one model, and the exact per-position statistics of both models along them.

:func:`sample_paths` draws plain autoregressive paths (prompts cycled by
:func:`repeat_prompts`); :func:`path_statistics` evaluates the target ``p`` and the draft ``q``
once along given paths: the exact ``TV(p, q)`` before every token, the rejection probability
``max(0, 1 - q(x_n)/p(x_n))`` and the acceptance ``min(1, p(x_n)/q(x_n))`` of the token taken
(:class:`PathStatistics`). :func:`mean_se` and :func:`zscore` summarise per-path values. The
predictions built on these are in :mod:`spectheory.validation.predict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._guards import check_int
from ..decoder.logits import logits_to_probs
from ..decoder.rng import row_seeds
from ..montecarlo.chisquare import mean_and_se

if TYPE_CHECKING:
    from ..decoder.batching import CausalLM

__all__ = [
    "mean_se",
    "zscore",
    "repeat_prompts",
    "sample_paths",
    "PathStatistics",
    "path_statistics",
    "proposal_caps",
]


def mean_se(x: ArrayLike, axis: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean over ``axis`` (ddof = 1; NaN SE for one sample):
    :func:`spectheory.montecarlo.chisquare.mean_and_se` with the sample axis first by default."""
    return mean_and_se(x, axis=axis)


def zscore(a: ArrayLike, se_a: ArrayLike, b: ArrayLike, se_b: ArrayLike) -> np.ndarray:
    """``(a - b) / sqrt(se_a**2 + se_b**2)`` (0 where both are exact and equal)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    s = np.sqrt(np.asarray(se_a, float) ** 2 + np.asarray(se_b, float) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, (a - b) / np.where(s > 0, s, 1.0), np.where(a == b, 0.0, np.inf))
    return z


def repeat_prompts(prompts: ArrayLike, n: int) -> np.ndarray:
    """``n`` prompts cycling through ``prompts`` (sequence ``i`` gets ``prompts[i % P]``);
    int64 array ``[n, L]`` (all prompts must have the same length)."""
    arr = np.asarray(prompts, dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"prompts: expected equal-length non-empty prompts, shape (P, L), got {arr.shape}")
    n = check_int(n, "n", 1)
    return arr[np.arange(n) % arr.shape[0]]


def sample_paths(
    model: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    seed: int,
    batch_size: int = 1024,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    device: str | torch.device | None = None,
) -> np.ndarray:
    """Plain autoregressive samples: int64 ``[N, L + T]`` (prompt followed by ``T`` tokens)."""
    from ..decoder.speculative import autoregressive_generate

    prompts = np.asarray(prompts, dtype=np.int64)
    out = []
    for lo in range(0, len(prompts), batch_size):
        chunk = prompts[lo : lo + batch_size]
        res = autoregressive_generate(
            model, list(chunk), horizon, *sampling, seed=row_seeds(seed, len(chunk), start=lo), device=device
        )
        out.append(np.concatenate([chunk, np.stack(res.tokens)], axis=1))
    return np.concatenate(out)


@dataclass
class PathStatistics:
    """Per-path, per-position exact quantities along given token paths.

    ``tv`` [N, T]: TV(p, q) before token n; ``reject`` [N, T]: ``max(0, 1 - q(x_n)/p(x_n))``;
    ``accept`` [N, T]: ``min(1, p(x_n)/q(x_n))``; ``target_laws``/``draft_laws``
    [N, T, V] float32 when kept (for fitting chains), else None.
    """

    tv: np.ndarray
    reject: np.ndarray
    accept: np.ndarray
    target_laws: np.ndarray | None = None
    draft_laws: np.ndarray | None = None


@torch.inference_mode()
def path_statistics(
    target: CausalLM,
    draft: CausalLM,
    paths: np.ndarray,
    n_prompt: int,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 256,
    keep_laws: bool = False,
    device: str | torch.device | None = None,
) -> PathStatistics:
    """Evaluate both models once along ``paths`` [N, L + T] (see :class:`PathStatistics`).

    ``n_prompt = L``: token ``n`` (1-based) of the generation is ``paths[:, L + n - 1]`` and
    its laws are read from the logits at position ``L + n - 2``. A model that declares
    ``batch_dependent_law`` (its law depends on what shares its call) is scored as the decoder
    calls it at batch 1: one path, one token at a time.
    """
    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    T = paths.shape[1] - L
    if T < 1:
        raise ValueError("paths: no generated tokens after the prompt")
    from .lossless import model_device

    dev = device if device is not None else model_device(target)
    tv, rej, acc, tl, dl = [], [], [], [], []
    for lo in range(0, len(paths), batch_size):
        ids = torch.as_tensor(paths[lo : lo + batch_size], device=dev)
        pt = logits_to_probs(_path_logits(target, ids, L), *sampling)  # [b, T, V]
        pd = logits_to_probs(_path_logits(draft, ids, L), *sampling)
        x = ids[:, L:, None]
        px, qx = pt.gather(-1, x)[..., 0], pd.gather(-1, x)[..., 0]
        tv.append((0.5 * (pt - pd).abs().sum(-1)).cpu().numpy())
        rej.append(torch.clamp(1.0 - qx / px, min=0.0).cpu().numpy())
        acc.append(
            torch.where(qx > 0, torch.clamp(px / torch.where(qx > 0, qx, 1.0), max=1.0), torch.ones_like(px))
            .cpu()
            .numpy()
        )
        if keep_laws:
            tl.append(pt.float().cpu().numpy())
            dl.append(pd.float().cpu().numpy())
    cat = np.concatenate
    return PathStatistics(
        cat(tv), cat(rej), cat(acc), cat(tl) if keep_laws else None, cat(dl) if keep_laws else None
    )


def _path_logits(model: Any, ids: torch.Tensor, n_prompt: int) -> torch.Tensor:
    """Logits ``[b, T, V]`` of ``model`` before each generated token of ``ids [b, L + T]``: one
    call over the paths, or, for a model whose law depends on what shares its call
    (``batch_dependent_law``: dynamic int8), the calls the decoder makes at batch 1: the prompt
    but its last token in one call, then one token at a time (the decoder's first draft step
    after a bonus token feeds two tokens at once: the one difference left)."""
    if not getattr(model, "batch_dependent_law", False):
        return model(ids[:, :-1])[:, n_prompt - 1 :]
    rows = []
    for row in ids[:, None, :]:  # [1, L + T] each
        cache = model.new_cache(1, row.shape[1], device=row.device)
        if n_prompt > 1:
            model(row[:, : n_prompt - 1], cache=cache, start=row.new_zeros(1))
        steps = [
            model(row[:, n : n + 1], cache=cache, start=row.new_full((1,), n))[:, 0]
            for n in range(n_prompt - 1, row.shape[1] - 1)
        ]
        rows.append(torch.stack(steps, 1))
    return torch.cat(rows)


@torch.inference_mode()
def proposal_caps(draft: Any, paths: ArrayLike, n_prompt: int, gamma: int | None = None) -> np.ndarray | None:
    """``caps [N, T]``: how many tokens a draft that knows how far it can propose (its
    ``proposal_cap``: prompt lookup) drafts in a round starting before each generated token of
    each path ``paths [N, L + T]``, capped by ``min(gamma, T - n)`` when ``gamma`` is given (else
    uncapped: the decoder caps by ``gamma`` and the tokens left); ``None`` for a draft that
    always drafts what it is asked. Given a path its caps are certain, so the along-path
    bookkeeping (:func:`~spectheory.validation.predict.round_dp`'s ``caps``, ``spectheory
    tune``'s kernels) runs the decoder's rounds exactly.

    Examples
    --------
    >>> from spectheory.decoder.prompt_lookup import PromptLookupModel
    >>> pl = PromptLookupModel(vocab_size=10, max_ngram_size=1, num_pred_tokens=3)
    >>> proposal_caps(pl, [[1, 2, 1, 2, 3, 4]], 2).tolist()   # "1 2 1": "2 1" follows the first "1"
    [[0, 2, 2, 0]]
    >>> proposal_caps(pl, [[1, 2, 1, 2, 3, 4]], 2, gamma=1).tolist()
    [[0, 1, 1, 0]]
    """
    cap = getattr(draft, "proposal_cap", None)
    if cap is None:
        return None
    from .lossless import model_device

    dev = model_device(draft)
    x = torch.as_tensor(np.asarray(paths, dtype=np.int64), device=dev)
    L = check_int(n_prompt, "n_prompt", 1)
    N, T = x.shape[0], x.shape[1] - L
    out = np.zeros((N, T), np.int64)
    for n in range(T):
        k = (1 << 30) if gamma is None else min(int(gamma), T - n)
        seq = torch.full((N,), L + n, dtype=torch.long, device=dev)
        out[:, n] = cap(x[:, : L + n], seq, torch.full((N,), k, dtype=torch.long, device=dev)).cpu().numpy()
    return out
