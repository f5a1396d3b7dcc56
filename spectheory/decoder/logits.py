"""From logits to the sampling law, and inverse-CDF sampling from given uniforms.

One function, :func:`logits_to_probs`, turns logits into the law a token is drawn from
(temperature, then top-k, then top-p, in float64). The decoder applies it identically to
the target's and the draft's logits, and uses the very same tensor both to draw the draft
token and in the acceptance ratio, so the law in the ratio is the law sampled from.
"""

from __future__ import annotations

import math
import numbers

import torch

from ..verifiers.torch_forms import sample_from_uniform  # noqa: F401  (re-exported: the one inverse-CDF sampler)


def check_sampling_args(
    temperature: float, top_k: int | None, top_p: float | None
) -> tuple[float, int | None, float | None]:
    """Validate sampling options; return ``(temperature, top_k, top_p)`` normalised.

    Raises
    ------
    ValueError
        ``temperature`` negative, NaN or infinite; ``top_k < 1`` or not an integer;
        ``top_p`` outside ``(0, 1]``.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise ValueError(f"temperature: expected a real number, got {temperature!r}")
    temperature = float(temperature)
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature: must be finite and >= 0, got {temperature!r}")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):
            raise ValueError(f"top_k: expected an integer >= 1 or None, got {top_k!r}")
        if top_k < 1:
            raise ValueError(f"top_k: must be >= 1, got {top_k}")
        top_k = int(top_k)
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise ValueError(f"top_p: expected a number in (0, 1] or None, got {top_p!r}")
        top_p = float(top_p)
        if not (0.0 < top_p <= 1.0):
            raise ValueError(f"top_p: must lie in (0, 1], got {top_p!r}")
    return temperature, top_k, top_p


def logits_to_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The sampling law over the last axis, in float64.

    With ``z`` the logits: ``temperature == 0`` gives the one-hot law of ``argmax z``
    (first maximal index on ties). Otherwise ``law = softmax(z / temperature)``; top-k
    keeps the tokens whose logit is ``>=`` the k-th largest (ties kept); top-p keeps, in
    decreasing order of probability, the shortest prefix whose mass reaches ``top_p``
    (a token is kept iff the mass strictly before it is ``< top_p``); the kept mass is
    renormalised.

    Parameters
    ----------
    logits : Tensor, shape (..., V)
    temperature : float >= 0
    top_k : int >= 1 or None
    top_p : float in (0, 1] or None

    Returns
    -------
    Tensor, float64, shape (..., V), rows summing to 1.

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    >>> logits_to_probs(z, 0.0).tolist()
    [[1.0, 0.0, 0.0, 0.0]]
    >>> p = logits_to_probs(z, 1.0, top_k=2)
    >>> [round(v, 4) for v in p[0].tolist()]
    [0.7311, 0.2689, 0.0, 0.0]
    >>> logits_to_probs(z, 1.0, top_p=0.5).tolist()
    [[1.0, 0.0, 0.0, 0.0]]
    """
    return sampling_law(logits, *check_sampling_args(temperature, top_k, top_p))


def sampling_law(
    logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None
) -> torch.Tensor:
    """:func:`logits_to_probs` for options already checked by :func:`check_sampling_args` (the
    decoder checks them once per call, not once per token)."""
    if temperature == 1.0 and top_k is None and top_p is None:  # the default law: one operation
        return torch.softmax(logits, dim=-1, dtype=torch.float64)
    z = logits.to(torch.float64)
    if temperature == 0.0:
        idx = z.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(z).scatter_(-1, idx, 1.0)
    if temperature != 1.0:  # z / 1.0 is z: one operation fewer per law at the default
        z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1:]
        z = z.masked_fill(z < kth, -math.inf)
    probs = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        mass_before = torch.cumsum(sorted_p, dim=-1) - sorted_p
        keep_sorted = mass_before < top_p
        keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
