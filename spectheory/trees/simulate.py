r"""Monte Carlo of tree speculative decoding on a chain, vectorised over runs.

Notation: p = target, q = draft. Each round drafts the tree (truncated at ``T - n``) with
the verifier's child policy, gathers the target and draft laws at every node, and applies
the verifier's pure rule (:func:`spectheory.trees.rules.tree_rule`) to fresh uniforms. The
protocol and the counts are those of :func:`spectheory.trees.tree_protocol` (docs/trees.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._guards import check_int
from .children import draw_children
from .draft_tree import DraftTree
from .verifiers import get_tree_verifier

__all__ = ["draw_children", "simulate_tree", "TreeSimulationResult"]


@dataclass
class TreeSimulationResult:
    """Per-run totals of a Monte Carlo of the tree protocol.

    Attributes
    ----------
    target_calls, rejections, draft_tokens, accepted : ndarray, shape (n_runs,)
    length_counts : ndarray, shape (depth + 1,)
        Rounds with ``j`` accepted drafts, over all runs.
    tokens : ndarray or None, shape (n_runs, T)
    """

    horizon: int
    target_calls: np.ndarray
    rejections: np.ndarray
    draft_tokens: np.ndarray
    accepted: np.ndarray
    length_counts: np.ndarray
    tokens: np.ndarray | None = None

    def mean_se(self, name):
        """``(mean, standard error)`` of a per-run total."""
        x = np.asarray(getattr(self, name), dtype=np.float64)
        return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0

    @property
    def accepted_length_law(self):
        return self.length_counts / self.length_counts.sum()


def _laws(kernel, pos, states):
    """``kernel[pos, states]`` for ``[T, S, V]`` kernels (``kernel[states]`` if ``[S, V]``)."""
    if kernel.ndim == 2:
        return kernel[states]
    return kernel[np.minimum(pos, kernel.shape[0] - 1), states]


def _one_chunk(chain, T, tree, v, R, rng, bonus, keep_tokens):
    N, D = tree.n_nodes, tree.max_depth
    depth = tree.depth
    target, draft, ns = np.asarray(chain.target), np.asarray(chain.draft), chain.next_state
    pos = np.zeros(R, dtype=np.int64)
    state = rng.choice(chain.n_states, size=R, p=chain.initial)
    calls, rej, drafted, acc = (np.zeros(R) for _ in range(4))
    counts = np.zeros(D + 1)
    out = np.full((R, T), -1, dtype=np.int64) if keep_tokens else None
    rows_all = np.arange(R)
    while True:
        live = rows_all[pos < T]
        if live.size == 0:
            break
        A = live.size
        n = pos[live]
        k = np.minimum(D, T - n)
        tok = np.full((A, N), -1, dtype=np.int64)
        st_ = np.zeros((A, N), dtype=np.int64)
        st_[:, 0] = state[live]
        present = np.zeros((A, N), dtype=bool)
        present[:, 0] = True
        for u in range(N):
            kids = tree.children[u]
            if not kids:
                continue
            du = _laws(draft, n + depth[u], st_[:, u])
            x = draw_children(du, len(kids), v.policy, rng)
            for j, c in enumerate(kids):
                ok = present[:, u] & (depth[c] <= k) & (x[:, j] >= 0)
                present[:, c] = ok
                tok[:, c] = np.where(ok, x[:, j], -1)
                st_[ok, c] = ns[st_[ok, u], x[ok, j]]
        t_laws = np.stack([_laws(target, n + depth[i], st_[:, i]) for i in range(N)], 1)
        d_laws = np.stack([_laws(draft, n + depth[i], st_[:, i]) for i in range(N)], 1)
        node, y, residual = v.verify(tree, tok, t_laws, d_laws, rng.random((A, N)), rng.random(A))
        j = depth[node]
        calls[live] += 1
        drafted[live] += present[:, 1:].sum(1)
        acc[live] += j
        rej[live] += residual
        np.add.at(counts, j, 1)
        end = n + j
        emit = residual | (bonus & (end < T))
        if keep_tokens:
            for r in range(A):
                path = tree.path_to(node[r])
                out[live[r], n[r] : n[r] + len(path)] = tok[r, path]
                if emit[r]:
                    out[live[r], end[r]] = y[r]
        s_end = st_[np.arange(A), node]
        state[live] = np.where(emit, ns[s_end, y], s_end)
        pos[live] = end + emit
    return calls, rej, drafted, acc, counts, out


def simulate_tree(
    chain,
    horizon,
    tree,
    verifier="tree_rrs",
    n_runs=1000,
    rng=None,
    bonus=True,
    return_tokens=False,
    max_elements=4_000_000,
) -> TreeSimulationResult:
    r"""Monte Carlo of ``n_runs`` generations of ``horizon`` tokens with a draft tree.

    Runs are processed in chunks of at most ``max_elements / (nodes * V)`` runs.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree, simulate_tree, tree_protocol
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> tree = DraftTree.from_branching([2, 1])
    >>> sim = simulate_tree(chain, 10, tree, "traversal", n_runs=400, rng=1)
    >>> m, se = sim.mean_se("target_calls")
    >>> bool(abs(m - tree_protocol(chain, 10, tree, "traversal").target_calls) < 5 * se)
    True
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("simulate_tree (token trees)")
    if not isinstance(tree, DraftTree):
        raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    v = get_tree_verifier(verifier)
    n_runs = check_int(n_runs, "n_runs", 1)
    rng = np.random.default_rng(rng)
    chunk = max(1, int(max_elements // (tree.n_nodes * chain.vocab_size)))
    parts = []
    done = 0
    while done < n_runs:
        R = min(chunk, n_runs - done)
        parts.append(_one_chunk(chain, T, tree, v, R, rng, bool(bonus), return_tokens))
        done += R
    cat = [np.concatenate([p[i] for p in parts]) for i in range(4)]
    counts = np.sum([p[4] for p in parts], 0)
    toks = np.concatenate([p[5] for p in parts]) if return_tokens else None
    return TreeSimulationResult(T, *cat, counts, toks)
