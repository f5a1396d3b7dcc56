r"""The verifier interface of the conformance kit, and a correct reference verifier.

**Interface.** A user wraps their speculative sampler in a function ::

    verify(target_probs, draft_probs, draft_tokens, rng) -> emitted

* ``target_probs`` -- ``[k+1, V]`` float64: row ``j`` is the target law (p) at draft position
  ``j`` given the drafts before it; row ``k`` is the bonus law after all ``k`` drafts;
* ``draft_probs`` -- ``[k, V]``: row ``j`` is the draft law (q) the token ``draft_tokens[j]``
  was sampled from;
* ``draft_tokens`` -- ``[k]`` int;
* ``rng`` -- a :class:`numpy.random.Generator` (the verifier's only source of randomness);
* ``emitted`` -- 1-d int array of length ``n + 1``: the accepted prefix
  ``draft_tokens[:n]`` followed by one token (the residual sample after a rejection at
  position ``n < k``, or the bonus token when ``n = k``).

Batched samplers (the common engine shape) implement ``verify_batch(target_probs [N, k+1, V],
draft_probs [N, k, V], draft_tokens [N, k], rng) -> [N, k+1]`` int with ``-1`` after the
emitted tokens; wrap such a function with :func:`as_batched` (or, for torch engines, with
:func:`spectheory.testing.torch_adapter.from_torch_sampler`).

**Reference.** :func:`reference_verify` is standard speculative sampling (Leviathan et al.
2023; Chen et al. 2023), p = target, q = draft -- the pure rule of the registered ``"token"``
:class:`~spectheory.verifiers.Verifier` (:mod:`spectheory.verifiers.token`), one round at a
time::

    for j in 0..k-1:
        if u_j * q_j(x_j) < p_j(x_j):  accept x_j          # u_j < min(1, p_j(x_j) / q_j(x_j))
        else: emit y ~ norm(max(p_j - q_j, 0)); stop
    emit y ~ p_k                                          # bonus token

The uniforms are drawn apart from the rule (:func:`accepted_count`,
:func:`spectheory.laws.sampling.sample_categorical`) so the rule can be checked with
hand-picked uniforms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng
from .._typing import RNGLike
from ..verifiers.token import TOKEN

if TYPE_CHECKING:
    from ..verifiers import Verifier

__all__ = [
    "accepted_count",
    "reference_verify",
    "reference_verify_batch",
    "as_batched",
    "BatchedVerifier",
    "from_round_verifier",
    "from_verifier",
    "PAD",
]

#: Padding value of the batched interface (positions after the emitted tokens).
PAD = -1


def _check_args(target_probs, draft_probs, draft_tokens, batched=False):
    t = np.asarray(target_probs, dtype=np.float64)
    d = np.asarray(draft_probs, dtype=np.float64)
    x = np.asarray(draft_tokens)
    lead = 1 if batched else 0
    shape = "[N, k, V]" if batched else "[k, V]"
    if d.ndim != 2 + lead or d.shape[-2] < 1:
        raise ValueError(f"draft_probs: expected shape {shape} with k >= 1, got {d.shape}")
    k, V = d.shape[-2:]
    if t.shape != d.shape[:-2] + (k + 1, V):
        raise ValueError(f"target_probs: expected shape {d.shape[:-2] + (k + 1, V)}, got {t.shape}")
    if x.shape != d.shape[:-1] or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(
            f"draft_tokens: expected an int array of shape {d.shape[:-1]}, got {x.dtype} {x.shape}"
        )
    if x.size and (x.min() < 0 or x.max() >= V):
        raise ValueError(f"draft_tokens: entries must lie in [0, {V})")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(d))) or t.min() < 0 or d.min() < 0:
        raise ValueError("target_probs, draft_probs: entries must be finite and >= 0")
    return t, d, x.astype(np.int64)


def accepted_count(
    target_probs: ArrayLike, draft_probs: ArrayLike, draft_tokens: ArrayLike, uniforms: ArrayLike
) -> int:
    r"""Number of accepted drafts given the acceptance uniforms (the rule, without randomness).

    Draft ``j`` is accepted iff ``uniforms[j] * q_j(x_j) < p_j(x_j)``, i.e.
    :math:`u_j < \min(1, p_j(x_j)/q_j(x_j))` (strict, so a token with :math:`p_j(x_j) = 0`
    is never accepted, even at ``u = 0``); the count stops at the first rejection.

    Examples
    --------
    >>> from spectheory.testing.reference import accepted_count
    >>> t = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]]; d = [[0.8, 0.2], [0.8, 0.2]]
    >>> accepted_count(t, d, [0, 0], [0.6, 0.7])     # 0.6 < 0.625 accepted, 0.7 rejected
    1
    >>> accepted_count(t, d, [0, 1], [0.6, 0.99])    # p/q = 2.5 for token 1
    2
    """
    t, d, x = _check_args(target_probs, draft_probs, draft_tokens)
    u = np.asarray(uniforms, dtype=np.float64)
    k = x.shape[0]
    if u.shape != (k,):
        raise ValueError(f"uniforms: expected shape ({k},), got {u.shape}")
    n, _ = TOKEN.rule(t[None], d[None], x[None], [k], u[None], [0.0])  # the token Verifier's rule
    return int(n[0])


def reference_verify(
    target_probs: ArrayLike, draft_probs: ArrayLike, draft_tokens: ArrayLike, rng: RNGLike
) -> np.ndarray:
    r"""Standard speculative sampling of one round (correct; the kit passes it).

    Parameters
    ----------
    target_probs : array_like, shape (k+1, V)
    draft_probs : array_like, shape (k, V)
    draft_tokens : array_like of int, shape (k,)
    rng : anything :func:`numpy.random.default_rng` accepts
        Draws ``k`` acceptance uniforms, then one uniform for the final token.

    Returns
    -------
    ndarray of int64, shape (n+1,)
        ``draft_tokens[:n]`` and the residual (``n < k``) or bonus (``n == k``) token.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.testing import reference_verify
    >>> t = np.array([[0.0, 1.0], [0.5, 0.5]]); d = np.array([[1.0, 0.0]])
    >>> reference_verify(t, d, [0], rng=0).tolist()    # token 0 has target 0: rejected
    [1]
    """
    t, d, x = _check_one(target_probs, draft_probs, draft_tokens)
    rng = as_rng(rng)
    k = x.shape[0]
    u = rng.random((1, k))
    n, y = TOKEN._rule(
        t[None], d[None], x[None], np.array([k]), u, rng.random(1)
    )  # the token Verifier's rule
    n = int(n[0])
    out = np.empty(n + 1, dtype=np.int64)
    out[:n] = x[:n]
    out[n] = y[0]
    return out


def _check_one(target_probs, draft_probs, draft_tokens):
    """Cheap validation of one round (shapes, dtype, token range, finite non-negative laws)."""
    t = np.asarray(target_probs, dtype=np.float64)
    d = np.asarray(draft_probs, dtype=np.float64)
    x = np.asarray(draft_tokens)
    if d.ndim != 2 or d.shape[0] < 1:
        raise ValueError(f"draft_probs: expected shape [k, V] with k >= 1, got {d.shape}")
    k, V = d.shape
    if t.shape != (k + 1, V):
        raise ValueError(f"target_probs: expected shape {(k + 1, V)}, got {t.shape}")
    if x.shape != (k,) or x.dtype.kind not in "iu":
        raise ValueError(f"draft_tokens: expected an int array of shape ({k},), got {x.dtype} {x.shape}")
    if x.min() < 0 or x.max() >= V:
        raise ValueError(f"draft_tokens: entries must lie in [0, {V})")
    if not (t.min() >= 0 and d.min() >= 0 and np.isfinite(t.sum() + d.sum())):
        raise ValueError("target_probs, draft_probs: entries must be finite and >= 0")
    return t, d, x


def reference_verify_batch(
    target_probs: ArrayLike, draft_probs: ArrayLike, draft_tokens: ArrayLike, rng: RNGLike
) -> np.ndarray:
    r"""Vectorised :func:`reference_verify` over a batch axis (same rule, other uniforms layout).

    Shapes ``[N, k+1, V]``, ``[N, k, V]``, ``[N, k]``; returns ``[N, k+1]`` int64, padded with
    :data:`PAD` (``-1``) after the emitted tokens.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.testing import reference_verify_batch
    >>> t = np.full((2, 2, 2), 0.5); d = np.full((2, 1, 2), 0.5)
    >>> reference_verify_batch(t, d, np.array([[0], [1]]), rng=0)[:, 0].tolist()   # t == d: accepted
    [0, 1]
    """
    t, d, x = _check_args(target_probs, draft_probs, draft_tokens, batched=True)
    rng = as_rng(rng)
    N, k = x.shape
    n, y = TOKEN._rule(t, d, x, np.full(N, k, dtype=np.int64), rng.random((N, k)), rng.random(N))
    out = np.full((N, k + 1), PAD, dtype=np.int64)
    pos = np.arange(k + 1)[None, :]
    xx = np.concatenate([x, np.zeros((N, 1), np.int64)], axis=1)
    out = np.where(pos < n[:, None], xx, out)
    out[np.arange(N), n] = y
    return out


class BatchedVerifier:
    """A batched verifier usable by the kit and, one round at a time, as a plain ``verify``.

    Parameters
    ----------
    verify_batch : callable
        ``verify_batch(target_probs [N,k+1,V], draft_probs [N,k,V], draft_tokens [N,k], rng)
        -> [N, k+1]`` int, padded with ``pad_value`` after the emitted tokens.
    pad_value : int
        Padding used by ``verify_batch`` (converted to the kit's ``-1``).
    name : str, optional

    Attributes
    ----------
    bonus : bool
        The protocol the kit checks it under (a bonus token after ``k`` accepted drafts)
        unless ``check_verifier(bonus=...)`` says otherwise; adapters set it.
    """

    bonus: bool = True
    #: How the kit drafts the tokens it hands over: ``"sample"`` or ``"argmax"``
    #: (:attr:`spectheory.verifiers.Verifier.drafting`).
    drafting: str = "sample"

    def __init__(
        self, verify_batch: Callable[..., Any], pad_value: int = PAD, name: str | None = None
    ) -> None:
        if not callable(verify_batch):
            raise ValueError("verify_batch: must be callable")
        self._fn = verify_batch
        self.pad_value = int(pad_value)
        self.__name__ = name or getattr(verify_batch, "__name__", "batched_verifier")

    def verify_batch(
        self, target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: RNGLike
    ) -> np.ndarray:
        out = np.asarray(self._fn(target_probs, draft_probs, draft_tokens, rng))
        if self.pad_value != PAD and np.issubdtype(out.dtype, np.integer):
            out = np.where(out == self.pad_value, PAD, out)
        return out

    def __call__(
        self, target_probs: ArrayLike, draft_probs: ArrayLike, draft_tokens: ArrayLike, rng: RNGLike
    ) -> np.ndarray:
        out = self.verify_batch(
            np.asarray(target_probs)[None], np.asarray(draft_probs)[None], np.asarray(draft_tokens)[None], rng
        )[0]
        stop = np.flatnonzero(out == PAD)
        return out[: stop[0]] if stop.size else out

    def __repr__(self) -> str:
        return f"BatchedVerifier({self.__name__})"


def as_batched(
    verify_batch: Callable[..., Any], pad_value: int = PAD, name: str | None = None
) -> BatchedVerifier:
    """Wrap a batched numpy verifier (see :class:`BatchedVerifier`) so the kit calls it batched.

    Examples
    --------
    >>> from spectheory.testing import as_batched, reference_verify_batch, check_verifier
    >>> report = check_verifier(as_batched(reference_verify_batch), n_samples=2000, rng=1)
    >>> report.passed
    True
    """
    return BatchedVerifier(verify_batch, pad_value, name)


def from_round_verifier(verify_round: Callable[..., Any], name: str | None = None) -> BatchedVerifier:
    """Adapt the package's round signature (:mod:`spectheory.laws.sampling`) to the kit.

    ``verify_round(target_laws [N,k+1,V], draft_laws [N,k,V], draft_tokens [N,k], k [N], rng)
    -> (n_accepted [N], final_token [N])``, e.g. the ``verify_round`` method of a
    :class:`~spectheory.verifiers.Verifier` (``get_verifier("block").verify_round``).
    """

    def verify_batch(target_probs, draft_probs, draft_tokens, rng):
        x = np.asarray(draft_tokens, dtype=np.int64)
        N, k = x.shape
        n, y = verify_round(target_probs, draft_probs, x, np.full(N, k, dtype=np.int64), rng)
        n = np.asarray(n, dtype=np.int64)
        pos = np.arange(k + 1)[None, :]
        xx = np.concatenate([x, np.zeros((N, 1), np.int64)], axis=1)
        out = np.where(pos < n[:, None], xx, PAD)
        out[np.arange(N), n] = y
        return out

    return BatchedVerifier(verify_batch, PAD, name or getattr(verify_round, "__name__", "round_verifier"))


def from_verifier(verifier: str | Verifier) -> BatchedVerifier:
    """A registered verifier name or :class:`~spectheory.verifiers.Verifier` object as a kit verifier.

    Calls the Verifier's ``verify_round`` (its pure rule on uniforms drawn from the kit's
    ``rng``) on all rows of an instance at once. :func:`~spectheory.testing.check_verifier`
    does this itself when handed a name or a Verifier.

    Examples
    --------
    >>> from spectheory.testing import check_verifier
    >>> check_verifier("token", n_samples=300, rng=0).passed
    True
    """
    from ..verifiers.base import get_verifier

    v = get_verifier(verifier)
    out = from_round_verifier(v.verify_round, name=f"verifier {v.name!r}")
    out.drafting = v.drafting  # the kit drafts as the rule's round does (greedy drafting)
    return out
