r"""Hidden-state abstractions: states = k-means clusters of the target's last hidden state.

The target GPT computes its next-token law as ``softmax(h @ W.T)`` from the final
(post-LayerNorm) hidden state ``h`` (:class:`spectheory.decoder.model.GPT`);
:func:`last_hidden_states` reads ``h`` with a forward hook on ``model.ln_f`` (the model is
not changed). Clustering ``h`` groups prefixes with similar target laws, whatever their
last bytes.

The cluster after token ``x`` is *not* a function of (cluster, ``x``): the true transition
is a law over clusters. :class:`HiddenStateAbstraction` approximates it by the most
frequent next cluster seen after (cluster, ``x``) on the target paths (then after ``x``
alone, then overall), so the fitted chain is an approximation without the certificate of
``docs/markov_abstraction.md`` (its state marginals need not match the clusters' true
frequencies).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .._validation import check_int

__all__ = ["path_laws", "last_hidden_states", "kmeans", "HiddenStateAbstraction"]


@torch.inference_mode()
def path_laws(model, paths, n_prompt, hidden=False, sampling=(1.0, None, None), batch_size=256, device=None):
    """The model's next-token laws ``[N, T, V]`` (float32) before each generated token of
    ``paths [N, L + T]``, and with ``hidden=True`` also its final hidden states ``[N, T, C]``
    (read by a forward hook on ``model.ln_f``; the model is not changed).

    Row ``[i, n - 1]`` belongs to generated token ``n`` (position ``L + n - 2`` of the path).
    """
    from ..decoder.sampling import logits_to_probs
    from .lossless import model_device
    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    if hidden and not hasattr(model, "ln_f"):
        raise ValueError("model: needs an ln_f module (a spectheory GPT) to read hidden states")
    grabbed = []
    hook = model.ln_f.register_forward_hook(lambda mod, inp, out: grabbed.append(out)) if hidden else None
    laws, hid = [], []
    try:
        dev = device if device is not None else model_device(model)
        for lo in range(0, len(paths), batch_size):
            grabbed.clear()
            logits = model(torch.as_tensor(paths[lo:lo + batch_size, :-1], device=dev))
            laws.append(logits_to_probs(logits[:, L - 1:], *sampling).float().cpu().numpy())
            if hidden:
                hid.append(grabbed[-1][:, L - 1:].float().cpu().numpy())
    finally:
        if hook is not None:
            hook.remove()
    return (np.concatenate(laws), np.concatenate(hid)) if hidden else np.concatenate(laws)


def last_hidden_states(model, paths, n_prompt, batch_size=256, device=None):
    """Final hidden states ``[N, T, C]`` (float32) before each generated token; see :func:`path_laws`."""
    return path_laws(model, paths, n_prompt, hidden=True, batch_size=batch_size, device=device)[1]


def kmeans(points, n_clusters, rng=None, n_iter=10):
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
    rng = np.random.default_rng(rng)
    seed_pts = x[rng.choice(len(x), size=min(len(x), 2 * K + 1000), replace=False)]   # k-means++ on a subsample
    centres = [seed_pts[rng.integers(len(seed_pts))]]
    d2 = ((seed_pts - centres[0]) ** 2).sum(1)
    for _ in range(1, K):
        cdf = np.cumsum(d2)
        i = int(np.searchsorted(cdf, rng.uniform() * cdf[-1], side="right")) if cdf[-1] > 0 else rng.integers(len(d2))
        c = seed_pts[min(i, len(d2) - 1)]
        centres.append(c)
        d2 = np.minimum(d2, ((seed_pts - c) ** 2).sum(1))
    c = np.array(centres)
    sq = (x ** 2).sum(1)
    labels = np.zeros(len(x), dtype=np.int64)
    for it in range(n_iter):
        dist = sq[:, None] - 2 * x @ c.T + (c ** 2).sum(1)[None, :]
        new = dist.argmin(1)
        if it and np.array_equal(new, labels):
            break
        labels = new
        ind = sp.csr_matrix((np.ones(len(x)), (labels, np.arange(len(x)))), shape=(K, len(x)))
        cnt = np.asarray(ind.sum(1)).ravel()
        c = np.where(cnt[:, None] > 0, (ind @ x) / np.maximum(cnt, 1)[:, None], c)
    return c, labels


class HiddenStateAbstraction:
    """States = clusters of the target's last hidden state; transitions = most likely next cluster.

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
    states : int array [N, T], next_state : int array [S, V], n_states : int,
    transition_determinism : float
        Fraction of observed transitions that the deterministic map gets right.
    """

    def __init__(self, hidden, tokens, n_clusters, rng=None, n_components=32, vocab_size=256):
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
        tok = np.asarray(tokens, dtype=np.int64)[:, :T - 1].ravel()
        src, dst = self.states[:, :-1].ravel(), self.states[:, 1:].ravel()
        pair = np.zeros((K * V, K))
        np.add.at(pair, (src * V + tok, dst), 1.0)
        by_tok = np.zeros((V, K))
        np.add.at(by_tok, (tok, dst), 1.0)
        overall = np.bincount(dst, minlength=K).argmax() if len(dst) else 0
        tok_best = np.where(by_tok.sum(1) > 0, by_tok.argmax(1), overall)
        best = np.where(pair.sum(1) > 0, pair.argmax(1), np.tile(tok_best, K))
        self.next_state = best.reshape(K, V)
        self.transition_determinism = float(pair.max(1).sum() / max(pair.sum(), 1.0))
