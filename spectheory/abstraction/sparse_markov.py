r"""The Markov abstraction of a real model at its real vocabulary: last-token states, sparse rows.

Notation: p = target, q = draft (laws after temperature/top-k/top-p). The construction
(:func:`fit_last_token_chain`):

- **states**: the last token of the prefix, for every token seen as a context along ``N``
  target paths of ``T`` generated tokens (the prompts' last tokens included), plus one
  *back-off* state (order 0) for the tokens never seen as a context;
- **rows**: the average of the models' exact next-token laws over the target positions in the
  state (soft counts: one forward pass of each model along each path, as
  :func:`~spectheory.abstraction.fitting.fit_abstraction` does with dense rows), the back-off
  row over all positions; both models' rows over the *same* target positions;
- **sparse**: at every position each law keeps its ``top_k`` largest entries; the state's row is
  the average of the kept entries, renormalised, and its *tail* the average dropped mass.
  With :math:`\bar p = \frac1n\sum_i p_i` (the untruncated average), :math:`d_i \ge 0` the
  dropped parts and :math:`\bar t = \frac1n \sum_i \|d_i\|_1`, the stored row is
  :math:`\tilde p = (\bar p - \bar d)/(1 - \bar t)` and
  :math:`2\,\mathrm{TV}(\tilde p, \bar p) = \|\bar t\,\tilde p - \bar d\|_1 \le 2\bar t`
  (equality when one law stands behind the state): the tail, which
  :class:`~spectheory.chain.SparseDecodingChain` turns into certified intervals
  (:meth:`~spectheory.chain.SparseDecodingChain.truncation_bound`).
- **transitions**: emitting ``x`` moves to ``x``'s state (the back-off state if ``x`` was never a
  context); the initial law is that of the prompts' last tokens.

What is certified: the exact values of the *untruncated* fitted chain lie in the truncation
bound's intervals. What is not: that the fitted chain predicts the real decoder. A last-token
chain forgets the rest of the prefix; its rows are averages over the visited prefixes, and the
chain's values are compared with the decoder's measured ones, not bounded by them
(``docs/real_model.md``; the per-position coarsening of :mod:`.certified`, whose Theorem-1 sum
is a lower bound on the true rejections, needs ``[T, S, V]`` kernels).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import check_int

if TYPE_CHECKING:
    from ..chain.sparse_chain import SparseDecodingChain

__all__ = ["fit_last_token_chain"]


def _top(probs: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries ``(values [M, k], ids [M, k])`` of rows ``[M, V]`` (torch or numpy)."""
    import torch

    t = torch.as_tensor(probs)
    v, i = t.topk(min(k, t.shape[-1]), dim=-1)
    return v.double().cpu().numpy(), i.cpu().numpy().astype(np.int64)


def _rows(state: np.ndarray, vals: np.ndarray, ids: np.ndarray, S: int, V: int) -> sp.csr_matrix:
    """Summed sparse rows ``[S, V]`` of the kept entries (``state [M]``, ``vals, ids [M, k]``)."""
    rows = np.repeat(state, vals.shape[1])
    m = sp.coo_matrix((vals.ravel(), (rows, ids.ravel())), shape=(S, V))
    return m.tocsr()


def fit_last_token_chain(
    target: Any,
    draft: Any,
    paths: ArrayLike,
    n_prompt: int,
    top_k: int = 64,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 8,
    device: Any = None,
) -> SparseDecodingChain:
    r"""Fit the last-token Markov abstraction of ``(target, draft)`` along target ``paths``, sparse.

    Parameters
    ----------
    target, draft : models of the decoder contract (``model(ids [B, L]) -> logits [B, L, V]``)
    paths : int array [N, L + T]
        Prompts (length ``L = n_prompt``) followed by target samples (e.g.
        :func:`~spectheory.validation.sample_paths`).
    n_prompt : int >= 1
    top_k : int >= 1
        Entries each law keeps at each position (module docstring; the dropped mass is the tail).
    sampling : (temperature, top_k, top_p) of the laws
    batch_size : paths per forward pass

    Returns
    -------
    SparseDecodingChain
        ``S`` = the seen contexts + 1 back-off state (the last); ``chain.context_tokens [S - 1]``
        the token of each state; ``chain.visits [S]`` the positions averaged in each row (the
        back-off row: all of them); ``target_tail``/``draft_tail`` the average dropped mass.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping.runtime import chain_models
    >>> from spectheory.validation import sample_paths
    >>> target, draft = chain_models(st.DecodingChain.random(5, rng=0))   # doctest: +SKIP
    >>> paths = sample_paths(target, [[0], [3]], 6, seed=1)                # doctest: +SKIP
    >>> fit_last_token_chain(target, draft, paths, 1, top_k=5).n_states <= 6   # doctest: +SKIP
    True
    """
    import torch

    from ..chain.sparse_chain import SparseDecodingChain
    from ..decoder.logits import logits_to_probs
    from ..validation.lossless import model_device

    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    k = check_int(top_k, "top_k", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    if paths.ndim != 2 or paths.shape[1] <= L:
        raise ValueError(f"paths: expected [N, L + T] with T >= 1 generated tokens, got {paths.shape}")
    V = int(target.vocab_size)
    N, T = paths.shape[0], paths.shape[1] - L
    context = paths[:, L - 1 : L - 1 + T]  # the token before each generated position
    seen = np.unique(context)
    S = seen.size + 1  # + the back-off state
    state_of = np.full(V, S - 1, dtype=np.int64)
    state_of[seen] = np.arange(seen.size)
    dev = device if device is not None else model_device(target)
    sums = {"target": sp.csr_matrix((S, V)), "draft": sp.csr_matrix((S, V))}
    dropped = {"target": np.zeros(S), "draft": np.zeros(S)}
    counts = np.zeros(S)
    with torch.inference_mode():
        for lo in range(0, N, batch_size):
            ids = torch.as_tensor(paths[lo : lo + batch_size, :-1], device=dev)
            st = state_of[context[lo : lo + batch_size]].ravel()
            st2 = np.concatenate([st, np.full(st.size, S - 1)])  # every position also feeds the back-off row
            np.add.at(counts, st2, 1.0)
            for name, model in (("target", target), ("draft", draft)):
                law = logits_to_probs(model(ids)[:, L - 1 :], *sampling).reshape(-1, V)
                vals, top = _top(law, k)
                vals2, top2 = np.concatenate([vals, vals]), np.concatenate([top, top])
                sums[name] = sums[name] + _rows(st2, vals2, top2, S, V)
                np.add.at(dropped[name], st2, np.clip(1.0 - vals2.sum(1), 0.0, None))
    inv = sp.diags(1.0 / counts)
    rows = {n: sp.csr_matrix(inv @ sums[n]) for n in sums}
    tails = {n: dropped[n] / counts for n in sums}
    for n in rows:  # renormalise the kept mass (module docstring: TV to the full average <= the tail)
        rows[n] = sp.csr_matrix(sp.diags(1.0 / np.asarray(rows[n].sum(1)).ravel()) @ rows[n])
    initial = np.bincount(state_of[paths[:, L - 1]], minlength=S).astype(np.float64)
    chain = SparseDecodingChain(
        rows["target"],
        rows["draft"],
        initial / initial.sum(),
        state_of,
        target_tail=tails["target"],
        draft_tail=tails["draft"],
    )
    chain.context_tokens = seen  # type: ignore[attr-defined]
    chain.visits = counts  # type: ignore[attr-defined]
    return chain
