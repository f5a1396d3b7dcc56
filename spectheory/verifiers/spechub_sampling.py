r"""SpecHub sampled: the authors' drafting and staged verifier (Monte Carlo of :mod:`.spechub`).

Sun, Zhou, Chen & Sun, EMNLP 2024, arXiv 2411.05289; from the authors' code,
MasterGodzilla/Speculative_decoding_OT @ 7d592b7: :func:`spechub_draw` is
``EAGLE/eagle/model/cnets.py`` ``sample`` (``mode == 'spechub'``), :func:`spechub_rule` the
``mode == 'spechub'`` branch of ``evaluate_posterior`` in ``EAGLE/eagle/model/utils.py``, run on
hand-given uniforms with the stage masses of :func:`~spectheory.verifiers.spechub.spechub_plan`
(so its exact law is that plan; tested at 5 SE).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, as_rng, check_int
from .._typing import RNGLike
from .multidraft import _categorical
from .spechub import _laws, _stages, hub_token

__all__ = ["spechub_draw", "spechub_rule", "spechub_verify"]


def spechub_draw(draft: ArrayLike, n: int, rng: RNGLike = None) -> np.ndarray:
    """``n`` pairs from SpecHub's drafting law, as the authors' sampler draws them: int64 ``[n, 2]``.

    ``x_1 ~ q``; ``x_2 = a`` unless ``x_1 = a``, then ``x_2 ~ q`` without ``a`` (``-1`` when
    ``q`` is a point mass on ``a``).

    Examples
    --------
    >>> from spectheory.verifiers.spechub_sampling import spechub_draw
    >>> x = spechub_draw([0.5, 0.3, 0.2], 1000, rng=0)
    >>> x.shape, bool(((x == 0).sum(1) == 1).all())   # every pair holds the hub once
    ((1000, 2), True)
    """
    d = np.asarray(draft, dtype=np.float64)
    n = check_int(n, "n", 1)
    rng = as_rng(rng)
    a = hub_token(d)
    u = rng.random((n, 2))
    first = _categorical(np.broadcast_to(d, (n, d.size)), u[:, 0])
    rest = d.copy()
    rest[a] = 0.0
    if rest.sum() > 0:
        other = _categorical(np.broadcast_to(rest / rest.sum(), (n, d.size)), u[:, 1])
    else:
        other = np.full(n, -1, dtype=np.int64)
    second = np.where(first == a, other, a)
    return np.stack([first, second], axis=1).astype(np.int64)


def spechub_rule(
    target: ArrayLike, draft: ArrayLike, candidates: ArrayLike, u: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""The verifier as the authors' loop runs it, on hand-given uniforms, vectorised over runs.

    Pair ``(i, a)``: accept ``i`` iff ``u[:, 0] < m1_i / q_i``, else ``a`` iff ``u[:, 1] < m4 /
    S4``; pair ``(a, i)``: accept ``i`` iff ``u[:, 0] < m2_i / Q(a, i)``, else ``a`` iff ``u[:, 1]
    < m3 / S3``; otherwise emit ``norm(r)`` by inverse CDF with ``u[:, 2]`` (module docstring).

    Parameters
    ----------
    target, draft : array_like, shape (V,)
    candidates : int array, shape (R, 2)
        Pairs of :func:`spechub_draw`.
    u : array, shape (R, 3)

    Returns
    -------
    accepted : ndarray of bool, shape (R,)
        The emitted token is a draft.
    token : ndarray of int64, shape (R,)
    """
    p, q, _ = _laws(np.asarray(target, dtype=np.float64), np.asarray(draft, dtype=np.float64))
    st = _stages(p, q)
    a, V = st["a"], len(p)
    x = np.asarray(candidates, dtype=np.int64)
    uu = np.asarray(u, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 2 or uu.shape != (x.shape[0], 3):
        raise ValueError(f"candidates, u: expected shapes (R, 2) and (R, 3), got {x.shape}, {uu.shape}")
    hub_first = x[:, 0] == a
    if np.any(hub_first == (x[:, 1] == a)) or x.min() < -1 or x.max() >= V:
        raise ValueError("candidates: every pair must hold the hub argmax(draft) exactly once")
    r1 = np.zeros(V)  # stage-1 ratio m1_i / q_i, indexed by i
    r2 = np.zeros(V)  # stage-2 ratio m2_i / Q(a, i)
    for i in st["m1"]:
        r1[i] = st["m1"][i] / q[i]
        r2[i] = st["m2"][i] / st["q_ai"][i] if st["q_ai"][i] > 0 else 0.0
    hub3 = st["m3"] / st["s3"] if st["s3"] > 0 else 0.0
    hub4 = st["m4"] / st["s4"] if st["s4"] > 0 else 0.0
    other = np.where(hub_first, x[:, 1], x[:, 0])
    safe = np.maximum(other, 0)
    draft_ok = (other >= 0) & (uu[:, 0] < np.where(hub_first, r2[safe], r1[safe]))
    hub_ok = ~draft_ok & (uu[:, 1] < np.where(hub_first, hub3, hub4))
    r = np.clip(np.array(st["r"], dtype=np.float64), 0.0, None)
    fallback = (
        _categorical(np.broadcast_to(r, (x.shape[0], V)), uu[:, 2]) if r.sum() > 0 else np.full(x.shape[0], a)
    )
    token = np.where(draft_ok, safe, np.where(hub_ok, a, fallback)).astype(np.int64)
    return draft_ok | hub_ok, token


def spechub_verify(
    target: ArrayLike, draft: ArrayLike, n: int, rng: RNGLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` SpecHub rounds (:func:`spechub_draw`, then :func:`spechub_rule`): ``(accepted [n], token [n])``.

    Examples
    --------
    >>> from spectheory.verifiers.spechub_sampling import spechub_verify
    >>> acc, tok = spechub_verify([0.5, 0.3, 0.2], [0.2, 0.5, 0.3], 4000, rng=0)
    >>> bool(0.87 < acc.mean() < 0.93)
    True
    """
    t, d = as_law_pair(target, draft)
    n = check_int(n, "n", 1)
    rng = as_rng(rng)
    cand = spechub_draw(d, n, rng)
    return spechub_rule(t, d, cand, rng.random((n, 3)))
