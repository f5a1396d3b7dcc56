r"""Hidden-state abstractions: states = k-means clusters of the target's last hidden state.

The target GPT computes its next-token law as ``softmax(h @ W.T)`` from the final
(post-LayerNorm) hidden state ``h`` (:class:`spectheory.decoder.model.GPT`);
:func:`last_hidden_states` reads ``h`` with a forward hook on ``model.ln_f`` (the model is
not changed). Clustering ``h`` groups prefixes with similar target laws, whatever their
last bytes.

The cluster after token ``x`` is *not* a function of (cluster, ``x``): the true transition
is a law over clusters, :math:`K(s'|s, x) = P(s_{n+1} = s' \mid s_n = s, X_n = x)` under the
target. :func:`cluster_transition_law` estimates it from the transitions observed along the
target paths (a :class:`~spectheory.DecodingChain` with stochastic ``next_state``); with the
exact per-position law the chain's state marginals are the clusters' true laws and its
Theorem-1 sum is a certified lower bound (``docs/markov_abstraction.md``, Section 7).
:class:`HiddenStateAbstraction` gives both that law (``transition_law``) and the older
deterministic approximation (``next_state``: the most frequent next cluster after (cluster,
``x``), then after ``x`` alone, then overall), which has no certificate (its state marginals
drift from the clusters' frequencies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM

__all__ = ["path_laws", "last_hidden_states", "kmeans", "cluster_transition_law", "HiddenStateAbstraction"]


@torch.inference_mode()
def path_laws(
    model: CausalLM,
    paths: np.ndarray,
    n_prompt: int,
    hidden: bool = False,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The model's next-token laws ``[N, T, V]`` (float32) before each generated token of
    ``paths [N, L + T]``, and with ``hidden=True`` also its final hidden states ``[N, T, C]``
    (read by a forward hook on ``model.ln_f``; the model is not changed).

    Row ``[i, n - 1]`` belongs to generated token ``n`` (position ``L + n - 2`` of the path).
    """
    from ..decoder.logits import logits_to_probs
    from ..validation.lossless import model_device

    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    ln_f: Any = getattr(model, "ln_f", None)
    if hidden and ln_f is None:
        raise ValueError("model: needs an ln_f module (a spectheory GPT) to read hidden states")
    grabbed: list[torch.Tensor] = []
    hook = ln_f.register_forward_hook(lambda mod, inp, out: grabbed.append(out)) if hidden else None
    laws, hid = [], []
    try:
        dev = device if device is not None else model_device(model)
        for lo in range(0, len(paths), batch_size):
            grabbed.clear()
            logits = model(torch.as_tensor(paths[lo : lo + batch_size, :-1], device=dev))
            laws.append(logits_to_probs(logits[:, L - 1 :], *sampling).float().cpu().numpy())
            if hidden:
                hid.append(grabbed[-1][:, L - 1 :].float().cpu().numpy())
    finally:
        if hook is not None:
            hook.remove()
    return (np.concatenate(laws), np.concatenate(hid)) if hidden else np.concatenate(laws)


def last_hidden_states(
    model: CausalLM,
    paths: np.ndarray,
    n_prompt: int,
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """Final hidden states ``[N, T, C]`` (float32) before each generated token; see :func:`path_laws`."""
    return path_laws(model, paths, n_prompt, hidden=True, batch_size=batch_size, device=device)[1]


def kmeans(
    points: ArrayLike, n_clusters: int, rng: RNGLike = None, n_iter: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding; returns ``(centres [K, C], labels [M])``.

    Examples
    --------
    >>> x = np.r_[np.zeros((5, 2)), np.ones((5, 2))]
    >>> c, lab = kmeans(x, 2, rng=0)
    >>> sorted(np.bincount(lab).tolist())
    [5, 5]
    """
    x = np.asarray(points, dtype=np.float32)
    K = check_int(n_clusters, "n_clusters", 1)
    if K > len(x):
        raise ValueError(f"n_clusters: {K} exceeds the number of points {len(x)}")
    rng = as_rng(rng)
    seed_pts = x[
        rng.choice(len(x), size=min(len(x), 2 * K + 1000), replace=False)
    ]  # k-means++ on a subsample
    centres = [seed_pts[rng.integers(len(seed_pts))]]
    d2 = ((seed_pts - centres[0]) ** 2).sum(1)
    for _ in range(1, K):
        cdf = np.cumsum(d2)
        i = (
            int(np.searchsorted(cdf, rng.uniform() * cdf[-1], side="right"))
            if cdf[-1] > 0
            else rng.integers(len(d2))
        )
        c = seed_pts[min(i, len(d2) - 1)]
        centres.append(c)
        d2 = np.minimum(d2, ((seed_pts - c) ** 2).sum(1))
    c = np.array(centres)
    sq = (x**2).sum(1)
    labels = np.zeros(len(x), dtype=np.int64)
    for it in range(n_iter):
        dist = sq[:, None] - 2 * x @ c.T + (c**2).sum(1)[None, :]
        new = dist.argmin(1)
        if it and np.array_equal(new, labels):
            break
        labels = new
        ind = sp.csr_matrix((np.ones(len(x)), (labels, np.arange(len(x)))), shape=(K, len(x)))
        cnt = np.asarray(ind.sum(1)).ravel()
        c = np.where(cnt[:, None] > 0, (ind @ x) / np.maximum(cnt, 1)[:, None], c)
    return c, labels


def _transition_counts(states, tokens, n_states, vocab_size, weights=None):
    """Sparse counts ``C[s * V + x, s']`` of the observed transitions ``(s_n, x_n, s_{n+1})``."""
    states = np.asarray(states, dtype=np.int64)
    N, T = states.shape
    tok = np.asarray(tokens, dtype=np.int64)[:, : T - 1]
    w = (
        np.ones((N, T - 1))
        if weights is None
        else np.repeat(np.asarray(weights, np.float64)[:, None], T - 1, 1)
    )
    rows = (states[:, :-1] * vocab_size + tok).ravel()
    return sp.csr_matrix((w.ravel(), (rows, states[:, 1:].ravel())), shape=(n_states * vocab_size, n_states))


def _top_law(counts, support):
    """Row law of ``counts`` (1-d) kept on its ``support`` largest entries, renormalised."""
    keep = np.argsort(-counts, kind="stable")[:support]
    keep = keep[counts[keep] > 0]
    return keep, counts[keep] / counts[keep].sum()


def cluster_transition_law(
    states: np.ndarray,
    tokens: np.ndarray,
    n_states: int,
    vocab_size: int = 256,
    weights: ArrayLike | None = None,
    backoff_support: int = 4,
) -> sp.csr_matrix:
    r"""Stochastic transition law of a state abstraction from target paths: CSR ``(S * V, S)``.

    Row ``s * V + x`` is the empirical law of the next state after token ``x`` in state ``s``,

    .. math:: \hat K(s'|s, x) = \frac{\#\{(i, n): s_{i,n} = s, x_{i,n} = x, s_{i,n+1} = s'\}}
                                    {\#\{(i, n): s_{i,n} = s, x_{i,n} = x\}},

    over the ``N`` target paths (``weights`` [N] weighs them, e.g. a bootstrap). Pairs
    never observed back off to the law after ``x`` alone, then to the overall law of the
    next state, each kept on its ``backoff_support`` most frequent states (sparsity; these
    rows carry the target mass of unobserved (state, token) pairs only). Use it as the
    ``next_state`` of a :class:`~spectheory.DecodingChain` (or :func:`.fit_abstraction`).

    Examples
    --------
    >>> states = np.array([[0, 1, 0], [0, 0, 1]]); tokens = np.array([[1, 0, 0], [1, 1, 0]])
    >>> law = cluster_transition_law(states, tokens, 2, vocab_size=2)
    >>> law.toarray().reshape(2, 2, 2)[0, 1].round(3).tolist()  # after (0, token 1): seen 0 once, 1 twice
    [0.333, 0.667]
    >>> law.toarray().reshape(2, 2, 2)[1, 1].round(3).tolist()  # never seen: back off to token 1's law
    [0.333, 0.667]
    """
    S, V = check_int(n_states, "n_states", 1), check_int(vocab_size, "vocab_size", 1)
    k = check_int(backoff_support, "backoff_support", 1)
    counts = _transition_counts(states, tokens, S, V, weights)
    seen = np.asarray(counts.sum(1)).ravel() > 0
    per_tok = _fold_tokens(counts, S, V)
    overall = np.asarray(counts.sum(0)).ravel()
    o_keep, o_law = _top_law(overall, k) if overall.sum() > 0 else (np.arange(1), np.ones(1))
    rows, cols, vals = [], [], []
    c = counts.tocoo()
    norm = np.asarray(counts.sum(1)).ravel()
    rows.append(c.row)
    cols.append(c.col)
    vals.append(c.data / norm[c.row])
    tok_law = {}
    for x in range(V):
        r = per_tok.getrow(x).toarray().ravel()
        tok_law[x] = _top_law(r, k) if r.sum() > 0 else (o_keep, o_law)
    missing = np.flatnonzero(~seen)
    for x in range(V):
        m = missing[missing % V == x]
        if not m.size:
            continue
        keep, law = tok_law[x]
        rows.append(np.repeat(m, keep.size))
        cols.append(np.tile(keep, m.size))
        vals.append(np.tile(law, m.size))
    out = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S * V, S)
    )
    out.sum_duplicates()
    return out


def _fold_tokens(counts, S, V):
    """``[V, S]`` counts of the next state after token ``x``, summed over the states."""
    c = counts.tocoo()
    return sp.csr_matrix((c.data, (c.row % V, c.col)), shape=(V, S))


class HiddenStateAbstraction:
    """States = clusters of the target's last hidden state; stochastic transitions (the law of the
    next cluster, :func:`cluster_transition_law`) or the most likely next cluster.

    Parameters
    ----------
    hidden : array [N, T, C]
        :func:`last_hidden_states` along target paths.
    tokens : int array [N, T]
        The generated tokens of those paths.
    n_clusters : int
    rng : seed for k-means
    n_components : int, optional
        Project on this many principal components before clustering (speed).

    Attributes
    ----------
    states : int array [N, T], n_states : int
    transition_law : scipy CSR matrix (S * V, S)
        :func:`cluster_transition_law` of the paths: a stochastic ``next_state``.
    next_state : int array [S, V]
        The most likely next cluster (deterministic approximation, uncertified).
    transition_determinism : float
        Fraction of observed transitions that the deterministic map gets right.
    """

    def __init__(
        self,
        hidden: np.ndarray,
        tokens: np.ndarray,
        n_clusters: int,
        rng: RNGLike = None,
        n_components: int | None = 32,
        vocab_size: int = 256,
    ) -> None:
        h = np.asarray(hidden, dtype=np.float64)
        N, T, C = h.shape
        flat = h.reshape(N * T, C)
        flat = flat - flat.mean(0)
        if n_components and n_components < C:
            _, vecs = np.linalg.eigh(np.cov(flat[:: max(1, len(flat) // 4000)].T))
            flat = flat @ vecs[:, ::-1][:, :n_components]
        K = check_int(n_clusters, "n_clusters", 1)
        _, labels = kmeans(flat, K, rng=rng)
        self.states = labels.reshape(N, T)
        self.n_states = K
        V = vocab_size
        pair = _transition_counts(self.states, tokens, K, V)  # sparse [K * V, K]
        by_tok = _fold_tokens(pair, K, V).toarray()
        dst = self.states[:, 1:].ravel()
        overall = np.bincount(dst, minlength=K).argmax() if len(dst) else 0
        tok_best = np.where(by_tok.sum(1) > 0, by_tok.argmax(1), overall)
        seen = np.asarray(pair.sum(1)).ravel() > 0
        best = np.where(seen, np.asarray(pair.argmax(axis=1)).ravel(), np.tile(tok_best, K))
        self.next_state = best.reshape(K, V)
        self.transition_determinism = float(pair.max(axis=1).sum() / max(pair.sum(), 1.0))
        self.transition_law = cluster_transition_law(self.states, tokens, K, V)
