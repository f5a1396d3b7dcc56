r"""Full-horizon predictions for any lossless tree verifier: round emission weights along target paths.

Notation: p = target, q = draft (laws after temperature/top-k/top-p); the tree protocol of
docs/trees.md (``bonus=True``); ``T`` new tokens after a prompt.

The node-local prediction of :mod:`spectheory.validation.tree_decoding` factorises a round over tree
nodes. Traversal verification is not node-local, and recursive rejection *without
replacement* needs ``V**(k-1)`` enumerated sibling prefixes per node (too many at
``V = 256`` for ``k >= 3``). Both are covered by one identity that holds for every lossless
tree verifier.

**Round emission weights.** Let a target path ``x_1..x_T`` be drawn from p. A round that
starts after ``n`` generated tokens either accepts ``j`` drafts and emits one more token
(``n + j < T``) or reaches the horizon (``n + j = T``). Write

.. math:: w(n, j) = \frac{P(\text{the round accepts } j \text{ drafts and emits }
          x_{n+1..n+j'} \mid x_{\le n})}{p(x_{n+1..n+j'} \mid x_{\le n})}, \qquad
          j' = \min(j + 1, T - n).

Because the verifier is lossless, the joint law of the output and the round boundaries is the
product of the round laws, and the output's law is the product of the p's; so given the
output the round boundaries form a Markov chain that jumps from ``n`` to ``n + j + 1`` with
probability ``w(n, j)``, and :func:`emission_dp` gives ``E[target calls | x]`` exactly from
the ``w``'s. Averaged over target paths this is an unbiased prediction of the decoder's
expected number of target calls.

**Estimating w without enumeration.** Given the drafted tree (tokens and laws), the verifier's
outcome law (uniforms integrated out, :meth:`spectheory.verifiers.tree_base.TreeVerifier.outcome_law`) gives
``P(accept node v)`` and the law ``f_v`` of the token emitted after it, so

.. math:: \hat w(n, j) = \sum_{v:\ \mathrm{depth}(v) = j,\ \mathrm{path}(v) = x_{n+1..n+j}}
          \frac{P(\text{accept } v)\, f_v(x_{n+j+1})}{p(x_{n+1..n+j+1})}

is unbiased for ``w(n, j)`` over the draw of the tree (:func:`round_weights`). Trees are
drawn by the decoder itself from each prefix ``x_{\le n}`` (:func:`sampled_round_weights`),
independently for different ``n``; each product in :func:`emission_dp` uses every round start
at most once, so the estimate of ``E[target calls | x]`` stays unbiased. Its extra variance is
inside the standard error over paths -- in principle. In practice it is heavy-tailed: the
ratio carries ``1/p`` of the path's tokens times the indicator that a drafted branch matches
them, so paths that p likes and q rarely drafts contribute rarely and hugely. On the shipped
models (V = 256) one tree per round start gave about 6x the node-local prediction's standard
error, and on a 2x2x1 traversal tree 5.51 +- 0.62 tokens per call against 2.84 +- 0.07
measured (the large weights never drawn; recursive rejection on the same trees as a control
variate did not help). Use it on small vocabularies (the tests) only.

**Forcing the path** (:func:`forced_path_weights`, single-path trees): the node at depth
``j`` carries the path's tokens with probability ``pi_j = prod q(x_i)``, and below it the
draft's own continuation; weighting the outcome by ``pi_j`` instead of drawing the match
removes the indicator, and the estimate is random only through the continuation (about 2x
the decoder's standard error on the shipped models). Branching trees: the same with importance
weights for the siblings around each forced child, :mod:`spectheory.validation.tree_forced`. For node-local rules the exact ``w`` is the product of
the per-node acceptances of :func:`spectheory.validation.tree_decoding.tree_round_dp`; the tests
check the two agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..kinds.policy.outcome_kernels import outcome_dp
from ..trees import DraftTree
from ..verifiers.base import get_verifier
from .tree_decoding import FirstRoundRecorded, run_first_round
from .tree_pruned import pruned_wo_tables, wo_node_laws_pruned  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from ..trees import DraftTree
    from ..verifiers.base import Verifier

__all__ = ["round_weights", "emission_dp", "sampled_round_weights"]


def round_weights(
    tree: DraftTree,
    tokens: np.ndarray,
    target_laws: np.ndarray,
    accept: np.ndarray,
    final: np.ndarray,
    path_tokens: np.ndarray,
    left: np.ndarray,
) -> np.ndarray:
    r"""Unbiased one-tree estimates ``w [R, D + 1]`` of the round emission weights.

    Parameters
    ----------
    tree : DraftTree
    tokens : int array [R, N]
        The drafted tree (node numbering of ``tree``; ``-1`` = not drafted).
    target_laws : array [R, N, V]
        p after each node (the decoder's laws in the round).
    accept, final : arrays [R, N] and [R, N, V]
        The verifier's outcome law given the tree (:meth:`spectheory.verifiers.tree_base.TreeVerifier.outcome_law`).
    path_tokens : int array [R, >= min(D + 1, max(left))]
        The target path's next tokens ``x_{n+1}, x_{n+2}, ...`` after the round's prefix.
    left : int array [R]
        Tokens still to generate (``T - n``); the tree is truncated at depth ``left``.

    Examples
    --------
    One draft that always matches a deterministic target: the round accepts it and emits
    the bonus, ``w = (0, 1)``.

    >>> import numpy as np
    >>> from spectheory.trees import DraftTree
    >>> tree = DraftTree.from_branching([1])
    >>> tl = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    >>> w = round_weights(tree, np.array([[-1, 1]]), tl, np.array([[0.0, 1.0]]), tl,
    ...                   np.array([[1, 0]]), np.array([5]))
    >>> w.tolist()
    [[0.0, 1.0]]
    """
    x = np.asarray(tokens, dtype=np.int64)
    t = np.asarray(target_laws, dtype=np.float64)
    acc = np.asarray(accept, dtype=np.float64)
    fin = np.asarray(final, dtype=np.float64)
    path = np.asarray(path_tokens, dtype=np.int64)
    left = np.asarray(left, dtype=np.int64)
    R = x.shape[0]
    rows = np.arange(R)
    w = np.zeros((R, tree.max_depth + 1))
    for v in range(tree.n_nodes):
        nodes = tree.path_to(v)
        j = len(nodes)
        ok = left >= j
        if not ok.any():
            continue
        match = ok.copy()
        dens = np.ones(R)
        prev = 0
        for i, u in enumerate(nodes):
            xi = np.clip(path[:, i], 0, None)
            match &= x[:, u] == path[:, i]
            dens *= t[rows, prev, xi]
            prev = u
        emit = j < left
        if j < path.shape[1]:
            xe = np.clip(path[:, j], 0, None)
            num = acc[:, v] * np.where(emit, fin[rows, v, xe], 1.0)
            dens = dens * np.where(emit, t[rows, v, xe], 1.0)
        else:
            num = acc[:, v]
        good = match & (dens > 0)
        w[:, j] += np.where(good, num / np.where(good, dens, 1.0), 0.0)
    return w


def emission_dp(weights: np.ndarray, horizon: int) -> np.ndarray:
    r"""``E[target calls | path] [N]`` from round emission weights ``weights [N, T, D + 1]``.

    ``weights[:, n, j]`` = ``w(n, j)`` of the module docstring (round starting after ``n``
    tokens); a round from ``n`` moves to ``min(n + j + 1, T)``. The weights are the tree kind's
    outcome kernel with the bonus token counted as the emitted one, and this is its
    :func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp`.

    Examples
    --------
    Every round accepting exactly one draft and emitting a bonus: 6 tokens in 3 calls.

    >>> import numpy as np
    >>> w = np.zeros((1, 6, 3)); w[..., 1] = 1.0
    >>> emission_dp(w, 6).tolist()
    [3.0]
    """
    w = np.asarray(weights, dtype=np.float64)
    N, T, D1 = w.shape
    if T != horizon:
        raise ValueError(f"weights: expected {horizon} round starts, got {T}")
    outcomes = np.zeros((T, D1, 2, N, 1))
    outcomes[:, :, 0, :, 0] = w.transpose(1, 2, 0)  # every round emits a token: none is "rejected"
    return outcome_dp(outcomes)["target_calls"]


def sampled_round_weights(
    run: Callable[..., Any],
    verifier: str | Verifier,
    tree: DraftTree,
    paths: np.ndarray,
    n_prompt: int,
    horizon: int,
    n_trees: int = 1,
    seed: int = 0,
) -> np.ndarray:
    r"""Round emission weights ``[N, T, D + 1]`` averaged over ``n_trees`` trees per round start.

    Parameters
    ----------
    run : callable
        ``run(rule, prompts, max_new_tokens, seed)`` runs the tree decoder (the drafter of the
        prediction, child policy = the verifier's) with the callable tree rule ``rule`` on the
        equal-length ``prompts``; e.g. ``lambda rule, pr, n, s: tree_generate(target, draft,
        pr, n, tree, rule, seed=s, children=children)``.
    verifier : str or TreeVerifier
        A lossless tree verifier with an ``outcome_law``.
    tree : DraftTree
    paths : int array [N, L + T]
        Target-sampled paths (prompt, then ``T`` tokens).
    n_prompt : int
        ``L``.
    horizon : int
        ``T``.
    n_trees : int
        Independent trees per (path, round start).
    seed : int
        Round start ``n`` uses the decoder seed ``seed + n``.

    Returns
    -------
    ndarray [N, T, D + 1]; :func:`emission_dp` turns it into ``E[target calls | path]``.
    """
    v = get_verifier(verifier).for_tree()
    if not isinstance(tree, DraftTree):
        raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    paths = np.asarray(paths, dtype=np.int64)
    N, L, T, D = paths.shape[0], int(n_prompt), int(horizon), tree.max_depth
    if paths.shape[1] != L + T:
        raise ValueError(f"paths: expected {L + T} columns (prompt + horizon), got {paths.shape[1]}")
    out = np.zeros((N, T, D + 1))
    for n in range(T):
        left = T - n
        width = min(D + 1, left)
        follow = np.repeat(paths[:, L + n : L + n + width], n_trees, axis=0)
        seen: list[np.ndarray] = []

        def rule(tree_, tokens, tl, dl, ua, uf, _follow=follow, _left=left, _seen=seen):
            if not _seen:
                accept, final = v.outcome_law(tree_, tokens, tl, dl)
                _seen.append(
                    round_weights(tree_, tokens, tl, accept, final, _follow, np.full(len(tokens), _left))
                )
            return v.verify(tree_, tokens, tl, dl, ua, uf)

        rule.name = v.name  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
        prompts = np.repeat(paths[:, : L + n], n_trees, axis=0)
        run(rule, [list(p) for p in prompts], width, seed + n)
        out[:, n] = seen[0].reshape(N, n_trees, D + 1).mean(1)
    return out


def forced_path_weights(
    run: Callable[..., Any],
    verifier: str | Verifier,
    depth: int,
    paths: np.ndarray,
    n_prompt: int,
    horizon: int,
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    seed: int = 0,
) -> np.ndarray:
    r"""Round emission weights ``[N, T, D + 1]`` for a *single-path* tree by forcing the path.

    For a path tree (one child per node, any child policy reduces to the draft law ``q``) the
    node at depth ``j`` carries ``x_{n+1..n+j}`` with probability
    ``pi_j = prod_{i < j} q(x_{n+i+1} | x_{<= n+i})``, and given that, the nodes below it are the
    draft's continuation from ``x_{<= n+j}``. So

    .. math:: \hat w(n, j) = \pi_j\, \frac{P(\text{accept node } j \mid \text{tree})\,
              f_j(x_{n+j+1})}{p(x_{n+1..n+j+1})}

    with the tree = the path's tokens up to depth ``j`` and one decoder-drafted continuation
    below, is unbiased for ``w(n, j)`` and random only through the continuation -- far less
    noisy than :func:`sampled_round_weights` (no match indicator).

    Parameters
    ----------
    run : callable
        ``run(rule, prompts, max_new_tokens, seed)``: the tree decoder with the draft model on a
        single-path tree of depth ``max_new_tokens - 1`` (``run`` builds that tree), as in
        :func:`sampled_round_weights`.
    verifier : str or TreeVerifier
    depth : int
        ``D``, the path's length.
    paths : int array [N, L + T]
    n_prompt, horizon : int
    target_laws, draft_laws : arrays [N, T, V]
        p and q before each generated token along the paths
        (:func:`spectheory.validation.predict.path_statistics` with ``keep_laws``).
    seed : int
    """
    v = get_verifier(verifier).for_tree()
    paths = np.asarray(paths, dtype=np.int64)
    tl_path = np.asarray(target_laws, dtype=np.float64)
    dl_path = np.asarray(draft_laws, dtype=np.float64)
    N, L, T, D = paths.shape[0], int(n_prompt), int(horizon), int(depth)
    V = tl_path.shape[2]
    rows = np.arange(N)
    x = paths[:, L:]
    out = np.zeros((N, T, D + 1))
    for n in range(T):
        left = T - n
        kmax = min(D, left)
        tree = DraftTree.from_branching([1] * kmax)
        for j in range(kmax + 1):
            tok = np.full((N, kmax + 1), -1, dtype=np.int64)
            tl = np.zeros((N, kmax + 1, V))
            dl = np.zeros((N, kmax + 1, V))
            tok[:, 1 : j + 1] = x[:, n : n + j]
            tl[:, :j] = tl_path[:, n : n + j]
            dl[:, :j] = dl_path[:, n : n + j]
            if j < kmax:  # draft the continuation below depth j
                seen: list[np.ndarray] = []

                def rule(tree_, tokens, tl_, dl_, ua, uf, _seen=seen):
                    _seen.append((tokens.copy(), tl_.copy(), dl_.copy()))
                    raise FirstRoundRecorded  # only the first round is read

                rule.name = v.name  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
                run_first_round(
                    run, rule, [list(p) for p in paths[:, : L + n + j]], kmax - j + 1, seed + 1000 * n + j
                )
                ct, ctl, cdl = seen[0]
                tok[:, j + 1 :] = ct[:, 1:]
                tl[:, j:] = ctl
                dl[:, j:] = cdl
            else:
                if n + j < T:
                    tl[:, j] = tl_path[:, n + j]
                dl[:, j] = tl[:, j]
            accept, final = v.outcome_law(tree, tok, tl, dl)
            num = accept[:, j]
            den = np.ones(N)
            for i in range(j):
                num = num * dl[rows, i, x[:, n + i]]
                den = den * tl[rows, i, x[:, n + i]]
            if j < left:
                num = num * final[rows, j, x[:, n + j]]
                den = den * tl[rows, j, x[:, n + j]]
            out[:, n, j] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return out
