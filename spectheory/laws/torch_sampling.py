"""Torch sampling primitives, pure functions of given uniforms (the torch twins of
:mod:`spectheory.laws.sampling`): the decoder, the torch forms of the rules and the child
policies' torch draws use these. Imported only where torch runs (``import spectheory.laws``
does not import torch).

Examples
--------
>>> import torch
>>> sample_from_uniform(torch.tensor([[0.5, 0.5]], dtype=torch.float64), torch.tensor([0.7])).tolist()
[1]
"""

from __future__ import annotations

import torch

__all__ = ["f64", "U_MAX", "sample_from_uniform", "draw_columns", "safe_div"]


def f64(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float64, without a dispatch when it is float64 already (the decoder's laws are:
    at batch 1 on a CPU a round is a count of small operations, docs/decoder_floor.md)."""
    return x if x.dtype == torch.float64 else x.to(torch.float64)


#: The largest double below 1: a uniform clamped to it gives ``u * total < total``.
U_MAX = 1.0 - 2.0**-53


def sample_from_uniform(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sampling: the smallest index ``i`` with ``cdf[i] > u * cdf[-1]``.

    A token of probability 0 is never returned (for ``0 <= u <= 1``): ``u * total`` is kept
    below the total, so ``u = 1`` gives a token of positive probability.

    Parameters
    ----------
    probs : Tensor, shape (..., V)
        Non-negative weights (need not be normalised; each row must have positive mass).
    u : Tensor, shape (...)
        Uniforms in ``[0, 1)``.

    Returns
    -------
    LongTensor, shape (...)

    Examples
    --------
    >>> import torch
    >>> p = torch.tensor([[0.25, 0.0, 0.75]], dtype=torch.float64)
    >>> sample_from_uniform(p.expand(3, 3), torch.tensor([0.1, 0.25, 0.9])).tolist()
    [0, 2, 2]
    """
    # u at most U_MAX (a no-op on valid uniforms): then u * total < total, and the first cdf
    # above it has p > 0 (the cdf rises there); u = 1 (e.g. a float32 uniform rounded up) gives
    # a token of positive mass, never the zero-mass tail
    return draw_columns(probs, f64(u).clamp(max=U_MAX)[..., None])[..., 0]


def draw_columns(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """:func:`sample_from_uniform` on uniforms given as a trailing column, already at most
    :data:`U_MAX`: five operations, the token again a column (what a draft step feeds back).

    Parameters
    ----------
    probs : Tensor, shape (..., V)
    u : float64 Tensor, shape (..., 1), in ``[0, U_MAX]``

    Returns
    -------
    LongTensor, shape (..., 1)

    Examples
    --------
    >>> import torch
    >>> p = torch.tensor([[0.25, 0.0, 0.75]], dtype=torch.float64).expand(3, 3)
    >>> draw_columns(p, torch.tensor([[0.1], [0.25], [0.9]], dtype=torch.float64)).tolist()
    [[0], [2], [2]]
    """
    cdf = torch.cumsum(probs, dim=-1, dtype=torch.float64)
    idx = torch.searchsorted(cdf, u * cdf[..., -1:], right=True)
    return idx.clamp(max=probs.shape[-1] - 1)  # a row without mass: the last token


def safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` where ``den > 0``, else 0 (the numpy rule's ``_safe_div``)."""
    pos = den > 0
    return torch.where(pos, num / torch.where(pos, den, torch.ones_like(den)), torch.zeros_like(num))
