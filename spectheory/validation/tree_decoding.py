r"""Tree decoding in the real decoder against the exact tree theory.

Notation: p = target, q = draft (laws after temperature/top-k/top-p); the tree protocol
of docs/trees.md (``bonus=True``); ``T`` new tokens after a prompt.

**Rao-Blackwellised prediction along target paths** (node-local rules: recursive rejection with
any child policy). The decoder's output is target-distributed, and at a tree node ``u`` at
prefix ``x_{<m}`` with ``k`` children the verifier emits ``x_m`` via child slot ``j`` with
mass ``A_j(x_m)`` or as a correction with mass ``R(x_m)`` (the exact per-node laws
:meth:`spectheory.children.ChildPolicy.node_laws`, ``sum_j A_j + R = p``). Given the output
sequence the outcomes at different nodes are independent, with

.. math:: P(\text{slot } j \mid x_m) = A_j(x_m) / p(x_m), \qquad
          P(\text{correction} \mid x_m) = R(x_m) / p(x_m),

so an exact dynamic programme over (round start, tree node) along each sampled target
path gives ``E[target calls | path]`` (:func:`tree_round_dp`); averaging over target paths
is unbiased (the single-path version is :func:`spectheory.validation.predict.round_dp`).
For draft models the draft law at a node is the draft's law at the path's prefix; for
Medusa heads it is head ``d``'s law at the round start's hidden state, so the tables are
indexed by (round start, depth).

**First round, every verifier** (traversal included): :func:`first_round_prediction`
records each first round's drafted tree and laws inside the decoder and evaluates the
verifier's exact outcome law given them (:meth:`spectheory.verifiers.tree_base.TreeVerifier.outcome_law`):
``E[accepted length | tree]`` averaged over independent trees, compared with the
decoder's first rounds in separate runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..children import get_child_policy
from ..kinds.policy.outcome_kernels import outcome_dp
from ..trees import DraftTree
from ..verifiers.base import get_verifier
from ..verifiers.multidraft import _categorical
from ..verifiers.tree_rules import RecursiveRejectionTree
from .round_kernels import tree_outcomes

if TYPE_CHECKING:
    from ..children import ChildPolicy
    from ..trees import DraftTree
    from ..verifiers.base import Verifier

__all__ = [
    "node_acceptance",
    "tree_round_dp",
    "first_round_prediction",
    "FirstRoundRecorded",
    "run_first_round",
    "broken_tree_rule",
    "tree_two_token_samples",
]


def node_acceptance(
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    tokens: np.ndarray,
    k: int,
    children: ChildPolicy | str,
    chunk: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    r"""``(a [k, M], res [M])``: ``A_j(x)/p(x)`` and ``R(x)/p(x)`` per row.

    ``target_laws, draft_laws [M, V]`` are the laws at ``M`` prefixes and ``tokens [M]`` the
    target path's token there; ``children`` the child policy (a
    :class:`~spectheory.children.ChildPolicy` or its shorthand). Rows with
    ``p(x) = 0`` get ``res = 1``.
    """
    children = get_child_policy(children)
    t = np.asarray(target_laws, dtype=np.float64)
    d = np.asarray(draft_laws, dtype=np.float64)
    x = np.asarray(tokens, dtype=np.int64)
    M = t.shape[0]
    a = np.zeros((k, M))
    res = np.ones(M)
    paths = children.node_law_paths(t.shape[1], k)  # enumerated prefixes per row (1: closed form)
    step = chunk if paths == 1 else max(1, 2_000_000 // paths)
    for lo in range(0, M, step):
        sl = slice(lo, min(M, lo + step))
        A, R = children.node_laws(t[sl], d[sl], k)
        rows = np.arange(sl.stop - sl.start)
        px = t[sl][rows, x[sl]]
        ok = px > 0
        a[:, sl] = np.where(ok, A[:, rows, x[sl]] / np.where(ok, px, 1.0), 0.0)
        res[sl] = np.where(ok, R[rows, x[sl]] / np.where(ok, px, 1.0), 1.0)
    return a, res


def tree_round_dp(tree: DraftTree, tables: dict, T: int) -> dict[str, np.ndarray]:
    r"""Exact expected round statistics per path given per-node acceptances: the dynamic programme
    of the tree kind's jump kernel (:func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` of
    :func:`~.round_kernels.tree_outcomes`).

    Parameters
    ----------
    tree : DraftTree
    tables : dict ``k -> (a [k, N, T, D], res [N, T, D])``
        For a node at depth ``du`` in a round starting after ``n`` generated tokens,
        with ``k`` children, ``a[j][:, n, du]`` = P(slot ``j`` accepted | output) and
        ``res[:, n, du]`` = P(correction | output) at the node's position ``n + du``.
    T : int
        Tokens generated.

    Returns
    -------
    dict: ``target_calls [N]``, ``accepted [N]`` (expected accepted drafts),
    ``first_accepted [N]`` (first round's expected accepted length).

    Examples
    --------
    Always accepting a single path of 2 drafts: 2 accepted + bonus per round, 6 tokens
    in 2 calls.

    >>> from spectheory.trees import DraftTree
    >>> tree = DraftTree.from_branching([1, 1])
    >>> one = np.ones((1, 1, 6, 2)); zero = np.zeros((1, 6, 2))
    >>> out = tree_round_dp(tree, {1: (one, zero)}, 6)
    >>> out["target_calls"].tolist(), out["first_accepted"].tolist()
    ([2.0], [2.0])
    """
    O = tree_outcomes(tree, tables, T)
    dp = outcome_dp(O)
    first = np.arange(O.shape[1], dtype=np.float64) @ O[0, :, :, :, 0].sum(1)  # the first round's E[j]
    return {"target_calls": dp["target_calls"], "accepted": dp["accepted"], "first_accepted": first}


class FirstRoundRecorded(Exception):
    """Raised by a recording rule once it holds what it needs from a decoder run's first round;
    :func:`run_first_round` stops the run there (later rounds are never read)."""


def run_first_round(run: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``run(*args, **kwargs)``, stopped at :class:`FirstRoundRecorded`: a decoder run whose
    rule records the first round, without the rounds after it.

    Examples
    --------
    >>> def run(n):
    ...     for rnd in range(n):
    ...         if rnd == 1:
    ...             raise FirstRoundRecorded
    ...     return "all rounds"
    >>> run_first_round(run, 5) is None
    True
    """
    try:
        run(*args, **kwargs)
    except FirstRoundRecorded:
        pass


def first_round_prediction(run: Callable[..., Any], verifier: str | Verifier, tree: DraftTree) -> np.ndarray:
    r"""Exact expected first-round accepted length per sequence, from the decoder's own trees.

    ``run(rule)`` must call the decoder with the callable ``rule`` (child policy = the
    verifier's) over the prompts; the rule records, for the *first* round, the verifier's
    exact outcome law given the drafted tree (uniforms integrated out) and stops the run
    (:class:`FirstRoundRecorded`). Returns ``E[j | tree]`` per sequence ``[B]``.
    """
    v = get_verifier(verifier).for_tree()
    depth = np.asarray(tree.depth, dtype=np.float64)
    seen: list[np.ndarray] = []

    def rule(tree_, tokens, tl, dl, ua, uf):
        accept, _ = v.outcome_law(tree_, tokens, tl, dl)
        seen.append(accept @ depth)
        raise FirstRoundRecorded  # the rest of the run is not needed

    rule.name = v.name  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
    run_first_round(run, rule)
    return seen[0]


def broken_tree_rule(children: ChildPolicy | str = "iid") -> Callable[..., Any]:
    """WRONG on purpose: recursive rejection (:class:`~spectheory.verifiers.tree_rules.RecursiveRejectionTree`
    on ``children``) whose correction is drawn from the target law at the node instead of the
    residual (built on the library's rule)."""
    right = RecursiveRejectionTree("rrs", children)

    def rule(tree, tokens, tl, dl, ua, uf):
        node, tok, residual = right.verify(tree, tokens, tl, dl, ua, uf)
        rows = np.arange(len(node))
        wrong = _categorical(np.asarray(tl, dtype=np.float64)[rows, node], np.asarray(uf, dtype=np.float64))
        return node, np.where(residual, wrong, tok), residual

    rule.name = "broken_target_correction"  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
    return rule


def tree_two_token_samples(
    generate: Callable[..., Any], prompt: Sequence[int], n_samples: int, seed: int = 0, batch_size: int = 512
) -> np.ndarray:
    """``n_samples`` pairs of new tokens ``[n, 2]`` from ``generate(prompts, seed) -> GenerationResult``
    (2 new tokens per prompt; sequence ``i`` has the row seed ``row_seeds(seed, n)[i]``, as in one
    unbatched call)."""
    from ..decoder.rng import row_seeds

    out = []
    for lo in range(0, n_samples, batch_size):
        b = min(batch_size, n_samples - lo)
        res = generate([list(prompt)] * b, row_seeds(seed, b, start=lo))
        out.append(np.stack(res.tokens))
    return np.concatenate(out).astype(np.int64)


def check_tree(tree: DraftTree) -> DraftTree:
    if not isinstance(tree, DraftTree):
        raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    return tree


def _child_counts(tree):
    return sorted({len(k) for k in tree.children if k})


def by_depth(a: np.ndarray, res: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-position acceptances ``a [k, N, T]`` and residual factors ``res [N, T]`` arranged by
    node depth for every round start: ``A[:, :, n, d] = a[:, :, n + d]`` (zero past the horizon),
    ``R[:, n, d] = res[:, n + d]`` (one past it). Returns ``(A [k, N, T, D], R [N, T, D])``."""
    k, N, T = a.shape
    A = np.zeros((k, N, T, depth))
    R = np.ones((N, T, depth))
    for du in range(depth):
        A[:, :, : T - du, du] = a[:, :, du:]
        R[:, : T - du, du] = res[:, du:]
    return A, R


def draft_tables(
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    tokens: np.ndarray,
    tree: DraftTree,
    children: ChildPolicy | str,
) -> dict:
    """Tables of :func:`tree_round_dp` for a draft model: laws along target paths.

    ``target_laws, draft_laws [N, T, V]``: the laws before generated token ``m`` on each
    path (:func:`spectheory.validation.predict.path_statistics` with ``keep_laws``);
    ``tokens [N, T]`` the path's tokens. The draft law at a node depends on its prefix only,
    so the entry for (round start ``n``, depth ``du``) is the one at ``m = n + du``.
    """
    t = np.asarray(target_laws, dtype=np.float64)
    N, T, V = t.shape
    D = tree.max_depth
    out = {}
    for k in _child_counts(tree):
        a, res = node_acceptance(
            t.reshape(-1, V),
            np.asarray(draft_laws, np.float64).reshape(-1, V),
            np.asarray(tokens).reshape(-1),
            k,
            children,
        )
        out[k] = by_depth(a.reshape(k, N, T), res.reshape(N, T), D)
    return out


def medusa_tables(
    target_laws: np.ndarray,
    head_laws: np.ndarray,
    tokens: np.ndarray,
    tree: DraftTree,
    children: ChildPolicy | str,
) -> dict:
    """Tables of :func:`tree_round_dp` for Medusa heads.

    ``head_laws [N, T, K, V]``: for a round starting after ``n`` generated tokens, the
    laws of heads ``1..K`` at the hidden state of the token before the root (absolute
    position ``L + n - 2``); a node at depth ``du`` drafts its children from head
    ``du + 1``. ``target_laws [N, T, V]`` and ``tokens [N, T]`` as in :func:`draft_tables`.
    """
    t = np.asarray(target_laws, dtype=np.float64)
    h = np.asarray(head_laws, dtype=np.float64)
    N, T, V = t.shape
    D = tree.max_depth
    out = {}
    for k in _child_counts(tree):
        A = np.zeros((k, N, T, D))
        Rm = np.ones((N, T, D))
        for du in range(D):
            m = T - du  # round starts with a node at this depth in range
            tl = t[:, du:].reshape(-1, V)
            dl = h[:, :m, du].reshape(-1, V)
            a, res = node_acceptance(tl, dl, np.asarray(tokens)[:, du:].reshape(-1), k, children)
            A[:, :, :m, du] = a.reshape(k, N, m)
            Rm[:, :m, du] = res.reshape(N, m)
        out[k] = (A, Rm)
    return out
