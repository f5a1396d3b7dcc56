r"""Conformance kit for tree verifiers: is yours lossless, and how does it compare?

Notation: p = target, q = draft. Wrap your tree verifier as a batched callable::

    verify(tree, tokens, target_laws, draft_laws, rng) -> (node, token)

with ``tree`` a :class:`~spectheory.trees.DraftTree`, ``tokens [R, N]`` (column 0 unused,
``-1`` = not drafted), ``target_laws``/``draft_laws [R, N, V]`` the laws *after* each node,
``node [R]`` the last node of the accepted path (0 = nothing accepted) and ``token [R]`` the
token emitted after it (correction, or the bonus at a leaf). The children of every node are
drawn by the kit with the child policy your engine drafts with (``children=``: a
:class:`~spectheory.children.ChildPolicy` -- ``IID()``, ``WithoutReplacement()``,
``TopK()`` -- or its shorthand ``"iid"``, ``"wo"``, ``"topk"``; ``"distinct"`` is ``"wo"``,
for engines that draft distinct children, as ``torch.multinomial(..., replacement=False)``
does). A verifier can declare it as an attribute (``verify.children = "distinct"``), as the
chain kit reads ``verify.bonus``.

:func:`check_tree_verifier` drafts trees on small Markov instances (:func:`tree_instances`,
or random ones: :func:`random_tree_instance`), runs your verifier, and completes every
emitted sequence by sampling the target to a fixed length ``depth + 1``; lossless means
that completed sequence has the target's law exactly, which is tested cell by cell against
the exact law (chi-square, cells expecting fewer than 5 pooled). Besides the exact checks
(:mod:`spectheory.testing._tree_checks`), the mean accepted length is tested against the
tree optimum (``above_optimum``: above what any lossless verifier accepts on that tree and
child policy, :func:`spectheory.trees.optimum.tree_optimum` -- the multi-draft
optimum on depth-1 trees, block verification on single paths, the lossless tree optimum
of :mod:`spectheory.trees.tree_lp` on other trees)
and, with ``efficiency=True``, against the library's rules with the same child policy
(``mean_accepted``: not below the weakest of recursive rejection sampling and traversal
verification, :mod:`spectheory.verifiers.tree_rules`; neither dominates the other on every
tree). The tests share the false-alarm budget ``alpha`` by
a Bonferroni split. :data:`TREE_GALLERY` holds deliberately buggy verifiers that the kit
catches (:mod:`spectheory.testing.tree_gallery`).

>>> from spectheory.testing.trees import check_tree_verifier, reference_tree_verify
>>> check_tree_verifier(reference_tree_verify("traversal"), children="wo", n_samples=3000, rng=0).passed
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .._guards import as_rng, check_prob
from .._typing import RNGLike
from ..children import ChildPolicy, WithoutReplacement, get_child_policy
from ..trees import tree_round_law
from ..verifiers.base import get_verifier, list_verifiers
from ..verifiers.multidraft import _categorical
from ..verifiers.tree_rules import RecursiveRejectionTree, TraversalTree
from ._tree_checks import determinism_problem, forced_problem, optimum_problems, randomness
from ._tree_instances import TREE_KINDS, draft_trees, random_tree_instance, tree_instances
from ._verdicts import measured_tv
from .randomness import kit_randomness
from .tree_gallery import TREE_GALLERY

if TYPE_CHECKING:
    from .._protocols import TreeRule
    from ..verifiers.base import Verifier

__all__ = [
    "check_tree_verifier",
    "assert_tree_verifier_lossless",
    "assert_tree_verifier_optimal",
    "reference_tree_verify",
    "tree_instances",
    "random_tree_instance",
    "TreeReport",
    "TREE_GALLERY",
    "TREE_CHECKS",
    "TREE_KINDS",
]

#: The checks a tree run reports, in the order :attr:`TreeReport.failed` names them.
TREE_CHECKS = (
    "law",
    "forced_uniforms",
    "determinism",
    "randomness",
    "above_optimum",
    "mean_accepted",
)


def reference_tree_verify(verifier: str | Verifier | TreeRule) -> Callable[..., Any]:
    """A correct tree verifier from :mod:`spectheory.trees` as a kit callable (``.children`` declared)."""
    v = get_verifier(verifier).for_tree()

    def verify(tree, tokens, target_laws, draft_laws, rng):
        R, N = tokens.shape
        node, tok, _ = v.verify(tree, tokens, target_laws, draft_laws, rng.random((R, N)), rng.random(R))
        return node, tok

    verify.__name__ = f"reference_{v.name}"
    verify.children = v.children  # type: ignore[attr-defined]
    verify.lossless = v.lossless  # type: ignore[attr-defined]
    return verify


#: What a declared-lossy run does not judge (a lossy rule may fail the law, and accept more
#: than the lossless optimum); the rows keep their verdicts, as notes.
LOSSY_NOT_JUDGED = ("law", "above_optimum")


def _row_failures(r: dict[str, Any]) -> list[str]:
    """The checks one row fails, in the order of :data:`TREE_CHECKS` (a lossy row: not
    :data:`LOSSY_NOT_JUDGED`)."""
    out = []
    for check in TREE_CHECKS:
        if r.get("lossy") and check in LOSSY_NOT_JUDGED:
            continue
        if (not r["law_passed"]) if check == "law" else bool(r.get(check)):
            out.append(check)
    return out


@dataclass
class TreeReport:
    """Result of :func:`check_tree_verifier`: one row per instance.

    ``lossy``: the run treated the rule as lossy (declared ``lossless = False``, or
    ``lossy=True``): each row's ``loss`` states the measured TV of the completed output from
    the target (``loss_tv``, and ``loss_interval`` that holds the true TV w.p. at least
    ``1 - alpha_i``); the law and ``above_optimum`` verdicts stay in the rows as notes."""

    passed: bool
    rows: list = field(default_factory=list)
    lossy: bool = False

    def __str__(self):
        head = f"tree verifier {'PASSED' if self.passed else 'FAILED'}"
        lines = [head + (" (declared lossy: loss measured, not judged)" if self.lossy else "")]
        for r in self.rows:
            ref = ", ".join(f"{k} {v:.3f}" for k, v in r["reference_accepted"].items())
            opt = "" if r.get("optimum") is None else f"; {r['optimum_kind']} {r['optimum']:.3f}"
            law = "ok" if r["law_passed"] else ("lossy" if r.get("lossy") else "BIASED")
            lines.append(
                f"  {r['instance']:>14}: p = {r['p_value']:.2e} {law}; "
                f"accepted {r['accepted']:.3f} +- {r['accepted_se']:.3f} (exact: {ref}{opt})"
            )
            for check in TREE_CHECKS[1:]:
                if r.get(check):
                    judged = not (r.get("lossy") and check in LOSSY_NOT_JUDGED)
                    lines.append(f"  {'':>14}  {'FAIL' if judged else 'note'} {check}: {r[check]}")
            if r.get("loss"):
                lines.append(f"  {'':>14}  loss: {r['loss']}")
            if r.get("note"):
                lines.append(f"  {'':>14}  note: {r['note']}")
        return "\n".join(lines)

    @property
    def failed(self) -> list:
        """Names of the failed checks, in the order of :data:`TREE_CHECKS`."""
        bad = {c for r in self.rows for c in _row_failures(r)}
        return [c for c in TREE_CHECKS if c in bad]


def _references(children: ChildPolicy) -> list[str]:
    """The library's registered tree rules drawing ``children`` (exact values beside yours)."""
    out = []
    for name in list_verifiers(trees=True):
        v = get_verifier(name)
        if isinstance(v, (RecursiveRejectionTree, TraversalTree)) and v.children == children:
            out.append(name)
    return out


def _policy(verify: Any, children: ChildPolicy | str | None) -> ChildPolicy:
    if children is None:
        children = getattr(verify, "children", "iid")
    if isinstance(children, str) and children == "distinct":
        return WithoutReplacement()
    return get_child_policy(children)


def _completed_counts(
    chain: Any, tree: Any, tok: np.ndarray, states: np.ndarray, node: np.ndarray, y: np.ndarray, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, law)`` over the ``V^(depth+1)`` sequences: the output completed by target
    sampling, and the exact target law from state 0."""
    n = tok.shape[0]
    L = tree.max_depth + 1
    out = np.full((n, L), -1, dtype=np.int64)
    depth = tree.depth[node]
    for r in range(n):
        path = tree.path_to(node[r])
        out[r, : len(path)] = tok[r, path]
    out[np.arange(n), depth] = y
    state = chain.next_state[states[np.arange(n), node], y]
    for j in range(1, L):  # complete by target sampling
        todo = depth < j
        if todo.any():
            out[todo, j] = _categorical(chain.target[state[todo]], rng.random(int(todo.sum())))
            state[todo] = chain.next_state[state[todo], out[todo, j]]
    law = np.zeros((chain.vocab_size,) * L)
    for seq in np.ndindex(*law.shape):  # exact target law from state 0
        p, s = 1.0, 0
        for x in seq:
            p *= chain.target[s, x]
            s = chain.next_state[s, x]
        law[seq] = p
    counts = np.bincount(np.ravel_multi_index(out.T, law.shape), minlength=law.size)
    return counts, law.ravel()


def _p_value(counts: np.ndarray, law: np.ndarray) -> float:
    """Chi-square p-value of ``counts`` against ``law`` (0 when a cell of probability 0 is hit)."""
    expected = law * int(counts.sum())
    if np.any(counts[expected == 0] > 0):
        return 0.0
    big = expected >= 5  # cells expecting < 5 are pooled (chi-square validity)
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    use = exp > 0
    return float(stats.chisquare(obs[use], exp[use]).pvalue)


def check_tree_verifier(
    verify: Callable[..., Any],
    children: ChildPolicy | str | None = None,
    n_samples: int = 20_000,
    rng: RNGLike = None,
    alpha: float = 1e-6,
    instances: Sequence[Any] | None = None,
    *,
    efficiency: bool = True,
    lossy: bool | None = None,
) -> TreeReport:
    """Run the kit on ``verify`` (see the module docstring); returns a :class:`TreeReport`.

    Parameters
    ----------
    verify : callable
        ``verify(tree, tokens, target_laws, draft_laws, rng) -> (node [R], token [R])``.
    children : ChildPolicy or {"iid", "wo", "distinct", "topk"}, optional
        How the kit drafts the children (default: ``verify.children`` if set, else ``"iid"``).
    n_samples : int
        Rounds per instance.
    rng : int, sequence of int, SeedSequence, Generator or None
        Anything :func:`numpy.random.default_rng` accepts (default None: fresh entropy).
    alpha : float
        Probability that a correct verifier fails the run (Bonferroni over the instances'
        law, optimum and efficiency tests).
    instances : sequence of ``(name, chain, tree)``, optional
        Default :func:`tree_instances`; :func:`random_tree_instance` builds random ones.
    efficiency : bool
        Also fail a mean accepted length significantly below every library tree rule with
        the same child policy (``mean_accepted``).
    lossy : bool, optional
        Treat the rule as lossy on purpose: the law test and ``above_optimum`` still run, but
        their failures become notes, and each row's ``loss`` states the *measured* TV of the
        completed output from the target law (plug-in estimate with the interval of
        :func:`~spectheory.testing._verdicts.measured_tv`; no tree rule has an exact output law
        to compare with). ``None`` (the default): what the rule declares, ``not
        verify.lossless`` (lossless when it has no such attribute); ``False``: the strict
        judgment.

    Notes
    -----
    An instance fails when the completed output's chi-square p-value is below its share of
    ``alpha`` or an output of target probability 0 appears (``law``), on the chain kit's
    exact checks (forced uniforms, determinism, draws outside the kit's routing, repeated
    reseeding), and on the one-sided Bernstein tests of the mean accepted length.
    """
    children = _policy(verify, children)
    if lossy is None:
        lossy = getattr(verify, "lossless", True) is False
    if lossy not in (True, False):
        raise ValueError(f"lossy: expected None, True or False, got {lossy!r}")
    alpha = float(check_prob(alpha, "alpha", open_low=True, open_high=True))
    if efficiency not in (True, False):
        raise ValueError(f"efficiency: expected True or False, got {efficiency!r}")
    rng = as_rng(rng)
    inst = tree_instances() if instances is None else list(instances)
    a_i = alpha / (len(inst) * (3 if efficiency else 2))
    rows = []
    refs = _references(children)
    for i_inst, (name, chain, tree) in enumerate(inst):
        tok, states, t_laws, d_laws = draft_trees(chain, tree, children, n_samples, rng)
        with kit_randomness(i_inst) as rec:
            node, y = verify(tree, tok, t_laws, d_laws, rng)
        records = [rec]

        def draft(n, chain=chain, tree=tree, seed=i_inst):
            tk, _, tl, dl = draft_trees(chain, tree, children, n, np.random.default_rng([seed, 1]))
            return tk, tl, dl

        forced = forced_problem(verify, tree, draft)
        det = determinism_problem(verify, tree, draft, 1000 + i_inst, records)
        rand, note = randomness(records, name)
        node, y = np.asarray(node, dtype=np.int64), np.asarray(y, dtype=np.int64)
        counts, law = _completed_counts(chain, tree, tok, states, node, y, rng)
        p_value = _p_value(counts, law)
        acc = tree.depth[node].astype(float)
        L = tree.max_depth + 1
        exact = {ref: float(tree_round_law(chain, tree, ref)[0] @ np.arange(L)) for ref in refs}
        weakest = min(exact.values()) if exact else None
        opt = optimum_problems(chain, tree, children, acc, weakest, a_i, efficiency)
        law_ok = p_value >= a_i
        row = {
            "instance": name,
            "p_value": p_value,
            "law_passed": law_ok,
            "forced_uniforms": forced,
            "determinism": det,
            "randomness": rand,
            "note": note,
            "accepted": float(acc.mean()),
            "accepted_se": float(acc.std(ddof=1) / np.sqrt(acc.size)) if acc.size > 1 else np.nan,
            "reference_accepted": exact,
            **opt,
        }
        if lossy:
            tv, lo, hi, n = measured_tv(counts, law, a_i)
            row["lossy"], row["loss_tv"], row["loss_interval"] = True, tv, (lo, hi)
            row["loss"] = (
                f"measured TV of the first {tree.max_depth + 1} tokens from the target {tv:.4f} "
                f"(in [{lo:.4f}, {hi:.4f}] w.p. >= 1 - {a_i:.2g}, n = {n}; no exact law to compare)"
            )
        row["passed"] = not _row_failures(row)
        rows.append(row)
    return TreeReport(all(r["passed"] for r in rows), rows, bool(lossy))


def assert_tree_verifier_lossless(
    verify: Callable[..., Any], children: ChildPolicy | str | None = None, **kwargs: Any
) -> TreeReport:
    """Raise AssertionError with the report unless :func:`check_tree_verifier` passes (law and
    exact checks, ``above_optimum`` included; ``efficiency=False``)."""
    kwargs["efficiency"] = False
    report = check_tree_verifier(verify, children, **kwargs)
    if not report.passed:
        raise AssertionError(str(report))
    return report


def assert_tree_verifier_optimal(
    verify: Callable[..., Any], children: ChildPolicy | str | None = None, **kwargs: Any
) -> TreeReport:
    """:func:`assert_tree_verifier_lossless` plus ``mean_accepted`` (not below the library's rules).

    >>> from spectheory.testing.trees import assert_tree_verifier_optimal, reference_tree_verify
    >>> _ = assert_tree_verifier_optimal(reference_tree_verify("tree_rrs_wo"), n_samples=2000, rng=0)
    """
    kwargs["efficiency"] = True
    report = check_tree_verifier(verify, children, **kwargs)
    if not report.passed:
        raise AssertionError(str(report))
    return report
