r"""Conformance kit for tree verifiers: is yours lossless, and how does it compare?

Notation: p = target, q = draft. Wrap your tree verifier as a batched callable::

    verify(tree, tokens, target_laws, draft_laws, rng) -> (node, token)

with ``tree`` a :class:`~spectheory.trees.DraftTree`, ``tokens [R, N]`` (column 0 unused,
``-1`` = not drafted), ``target_laws``/``draft_laws [R, N, V]`` the laws *after* each node,
``node [R]`` the last node of the accepted path (0 = nothing accepted) and ``token [R]`` the
token emitted after it (correction, or the bonus at a leaf). The children of every node are
drawn by the kit with the child policy your verifier expects (``children=``: a
:class:`~spectheory.verifiers.children.ChildPolicy` -- ``IID()``, ``WithoutReplacement()``,
``TopK()`` -- or its shorthand ``"iid"``, ``"wo"``, ``"topk"``).

:func:`check_tree_verifier` drafts trees on small Markov instances, runs your verifier, and
completes every emitted sequence by sampling the target to a fixed length ``depth + 1``;
lossless means that completed sequence has the target's law exactly, which is tested cell
by cell against the exact law (chi-square, cells expecting fewer than 5 pooled, false-alarm
rate ``alpha``). It also reports your
mean accepted length beside the exact values of the library's tree verifiers with the same
child policy (:mod:`spectheory.verifiers.tree_rules`). :data:`TREE_GALLERY` holds deliberately buggy verifiers that the
kit catches.

>>> from spectheory.testing.trees import check_tree_verifier, reference_tree_verify
>>> check_tree_verifier(reference_tree_verify("traversal"), children="wo", n_samples=3000, rng=0).passed
True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .._guards import as_rng
from .._typing import RNGLike
from ..trees import DraftTree, tree_round_law
from ..verifiers.base import get_verifier, list_verifiers
from ..verifiers.children import IID, ChildPolicy, TopK, WithoutReplacement, get_child_policy
from ..verifiers.multidraft import _categorical
from ..verifiers.tree_rules import RecursiveRejectionTree, TraversalTree
from ._tree_checks import determinism_problem, forced_problem, randomness
from .randomness import kit_randomness

if TYPE_CHECKING:
    from ..verifiers.base import Verifier

__all__ = [
    "check_tree_verifier",
    "assert_tree_verifier_lossless",
    "reference_tree_verify",
    "tree_instances",
    "TreeReport",
    "TREE_GALLERY",
]


def reference_tree_verify(verifier: str | Verifier) -> Callable[..., Any]:
    """A correct tree verifier from :mod:`spectheory.trees` as a kit callable."""
    v = get_verifier(verifier).for_tree()

    def verify(tree, tokens, target_laws, draft_laws, rng):
        R, N = tokens.shape
        node, tok, _ = v.verify(tree, tokens, target_laws, draft_laws, rng.random((R, N)), rng.random(R))
        return node, tok

    verify.__name__ = f"reference_{v.name}"
    return verify


def tree_instances() -> list:
    """Kit instances: ``(name, chain, tree)``, first-order chains over 3 and 5 tokens."""
    import spectheory as st

    far = st.DecodingChain.from_matrices(
        [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]],
        [[0.1, 0.3, 0.6], [0.6, 0.2, 0.2], [0.4, 0.5, 0.1]],
    )
    near = st.DecodingChain.random(3, concentration=1.0, similarity=0.6, rng=3)
    wide = st.DecodingChain.random(5, concentration=0.5, rng=3)
    return [
        ("far, [2, 1]", far, DraftTree.from_branching([2, 1])),
        ("V=5, [3]", wide, DraftTree.from_branching([3])),
        ("far, [3]", far, DraftTree.from_branching([3])),
        ("near, [1, 1]", near, DraftTree.from_branching([1, 1])),
        ("near, mixed", near, DraftTree.from_parents([-1, 0, 1, 0])),
    ]


def _draft_trees(chain, tree, children, R, rng, s0=0):
    chain.require_deterministic("the tree-verifier kit")
    N = tree.n_nodes
    tok = np.full((R, N), -1, dtype=np.int64)
    st_ = np.full((R, N), s0, dtype=np.int64)
    ok = np.zeros((R, N), dtype=bool)
    ok[:, 0] = True
    for u in range(N):
        kids = tree.children[u]
        if kids:
            x = children.draw(chain.draft[st_[:, u]], len(kids), rng)
            for j, c in enumerate(kids):
                ok[:, c] = ok[:, u] & (x[:, j] >= 0)
                tok[:, c] = np.where(ok[:, c], x[:, j], -1)
                st_[ok[:, c], c] = chain.next_state[st_[ok[:, c], u], x[ok[:, c], j]]
    return tok, st_, chain.target[st_], chain.draft[st_]


@dataclass
class TreeReport:
    """Result of :func:`check_tree_verifier`: one row per instance."""

    passed: bool
    rows: list = field(default_factory=list)

    def __str__(self):
        lines = [f"tree verifier {'PASSED' if self.passed else 'FAILED'}"]
        for r in self.rows:
            ref = ", ".join(f"{k} {v:.3f}" for k, v in r["reference_accepted"].items())
            lines.append(
                f"  {r['instance']:>14}: p = {r['p_value']:.2e} {'ok' if r['law_passed'] else 'BIASED'}; "
                f"accepted {r['accepted']:.3f} +- {r['accepted_se']:.3f} (exact: {ref})"
            )
            for check in ("forced_uniforms", "determinism", "randomness"):
                if r.get(check):
                    lines.append(f"  {'':>14}  FAIL {check}: {r[check]}")
            if r.get("note"):
                lines.append(f"  {'':>14}  note: {r['note']}")
        return "\n".join(lines)

    @property
    def failed(self) -> list:
        """Names of the failed checks (``law``, ``forced_uniforms``, ``determinism``, ``randomness``)."""
        out: list = []
        for r in self.rows:
            for check in ("law", "forced_uniforms", "determinism", "randomness"):
                bad = not r["law_passed"] if check == "law" else bool(r.get(check))
                if bad and check not in out:
                    out.append(check)
        return out


def _references(children: ChildPolicy) -> list[str]:
    """The library's registered tree rules drawing ``children`` (exact values beside yours)."""
    out = []
    for name in list_verifiers(trees=True):
        v = get_verifier(name)
        if isinstance(v, (RecursiveRejectionTree, TraversalTree)) and v.children == children:
            out.append(name)
    return out


def check_tree_verifier(
    verify: Callable[..., Any],
    children: ChildPolicy | str = "iid",
    n_samples: int = 20_000,
    rng: RNGLike = None,
    alpha: float = 1e-6,
    instances: Sequence[Any] | None = None,
    *,
    policy: ChildPolicy | str | None = None,
) -> TreeReport:
    """Run the kit on ``verify`` (see the module docstring); returns a :class:`TreeReport`.

    ``children`` is the child policy the kit drafts with (``policy=`` is its deprecated
    name). An instance fails when the completed output's chi-square p-value is below
    ``alpha / n_instances`` or when an output with target probability 0 appears, and on the
    chain kit's exact checks (:mod:`spectheory.testing._tree_checks`): forced uniforms,
    determinism, draws outside the kit's routing and repeated reseeding.
    """
    if policy is not None:
        warnings.warn(
            "check_tree_verifier(policy=) is deprecated; pass the child policy as children=",
            DeprecationWarning,
            stacklevel=2,
        )
        children = policy
    children = get_child_policy(children)
    rng = as_rng(rng)
    inst = tree_instances() if instances is None else instances
    rows = []
    refs = _references(children)
    for i_inst, (name, chain, tree) in enumerate(inst):
        tok, states, t_laws, d_laws = _draft_trees(chain, tree, children, n_samples, rng)
        with kit_randomness(i_inst) as rec:
            node, y = verify(tree, tok, t_laws, d_laws, rng)
        records = [rec]

        def draft(n, chain=chain, tree=tree, seed=i_inst):
            tk, _, tl, dl = _draft_trees(chain, tree, children, n, np.random.default_rng([seed, 1]))
            return tk, tl, dl

        forced = forced_problem(verify, tree, draft)
        det = determinism_problem(verify, tree, draft, 1000 + i_inst, records)
        rand, note = randomness(records, name)
        node, y = np.asarray(node, dtype=np.int64), np.asarray(y, dtype=np.int64)
        L = tree.max_depth + 1
        out = np.full((n_samples, L), -1, dtype=np.int64)
        depth = tree.depth[node]
        for r in range(n_samples):
            path = tree.path_to(node[r])
            out[r, : len(path)] = tok[r, path]
        out[np.arange(n_samples), depth] = y
        state = chain.next_state[states[np.arange(n_samples), node], y]
        for j in range(1, L):  # complete by target sampling
            todo = depth < j
            if todo.any():
                out[todo, j] = _categorical(chain.target[state[todo]], rng.random(int(todo.sum())))
                state[todo] = chain.next_state[state[todo], out[todo, j]]
        V = chain.vocab_size
        law = np.zeros((V,) * L)
        for seq in np.ndindex(*law.shape):  # exact target law from state 0
            p, s = 1.0, 0
            for x in seq:
                p *= chain.target[s, x]
                s = chain.next_state[s, x]
            law[seq] = p
        counts = np.bincount(np.ravel_multi_index(out.T, law.shape), minlength=law.size)
        expected = law.ravel() * n_samples
        impossible = bool(np.any(counts[expected == 0] > 0))
        big = expected >= 5  # cells expecting < 5 are pooled (chi-square validity)
        obs = np.append(counts[big], counts[~big].sum())
        exp = np.append(expected[big], expected[~big].sum())
        use = exp > 0
        p_value = 0.0 if impossible else float(stats.chisquare(obs[use], exp[use]).pvalue)
        acc = tree.depth[node].astype(float)
        exact = {ref: float(tree_round_law(chain, tree, ref)[0] @ np.arange(L)) for ref in refs}
        law_ok = p_value >= alpha / len(inst)
        rows.append(
            {
                "instance": name,
                "p_value": p_value,
                "law_passed": law_ok,
                "forced_uniforms": forced,
                "determinism": det,
                "randomness": rand,
                "note": note,
                "passed": law_ok and not (forced or det or rand),
                "accepted": float(acc.mean()),
                "accepted_se": float(acc.std(ddof=1) / np.sqrt(acc.size)),
                "reference_accepted": exact,
            }
        )
    return TreeReport(all(r["passed"] for r in rows), rows)


def assert_tree_verifier_lossless(
    verify: Callable[..., Any], children: ChildPolicy | str = "iid", **kwargs: Any
) -> TreeReport:
    """Raise AssertionError with the report unless :func:`check_tree_verifier` passes."""
    report = check_tree_verifier(verify, children, **kwargs)
    if not report.passed:
        raise AssertionError(str(report))
    return report


# ------------------------------------------------------------------ gallery of tree bugs
def _rrs_variant(bug):
    """Top-down recursive rejection with one deliberate bug (vectorised, per-run loops)."""

    checked_as = IID() if bug == "draft_for_wo" else bug_policy[bug]  # the slot law the rule uses

    def verify(tree, tokens, target_laws, draft_laws, rng):
        R, N = tokens.shape
        node = np.zeros(R, dtype=np.int64)
        token = np.zeros(R, dtype=np.int64)
        for r in range(R):
            u = 0
            while True:
                kids = [c for c in tree.children[u] if tokens[r, c] >= 0]
                res = target_laws[r, u].copy()
                acc = None
                for j, c in enumerate(tree.children[u]):
                    x = tokens[r, c]
                    if x < 0:
                        continue
                    s = checked_as.slot_law(draft_laws[r : r + 1, u], tokens[r : r + 1], tree.children[u], j)[
                        0
                    ]
                    if rng.random() < min(1.0, res[x] / s[x]) if s[x] > 0 else False:
                        acc = c
                        break
                    if bug == "no_zeroing":
                        res = res / res.sum()  # forgot to zero x first
                    else:
                        ex = np.maximum(res - s, 0.0)
                        res = ex / ex.sum() if ex.sum() > 1e-15 else res
                if acc is None and bug == "orphan" and kids and tree.children[kids[0]]:
                    g = tree.children[kids[0]][0]  # child of a rejected parent
                    t, d = target_laws[r, kids[0]], draft_laws[r, kids[0]]
                    if tokens[r, g] >= 0 and rng.random() < min(1.0, t[tokens[r, g]] / d[tokens[r, g]]):
                        acc = g
                if acc is None:
                    law = target_laws[r, u] if bug == "correction_from_target" else res
                    node[r], token[r] = u, rng.choice(law.size, p=law / law.sum())
                    break
                u = acc
                if not tree.children[u]:
                    node[r], token[r] = u, rng.choice(target_laws.shape[2], p=target_laws[r, u])
                    break
        return node, token

    verify.__name__ = f"buggy_{bug}"
    return verify


#: The child policy each bug's trees are drawn with.
bug_policy = {
    "correction_from_target": IID(),
    "no_zeroing": TopK(),
    "orphan": IID(),
    "draft_for_wo": WithoutReplacement(),
}

#: Buggy tree verifiers: ``name -> (verify, child policy the kit should draft with)``.
TREE_GALLERY = {
    "correction_from_target": (_rrs_variant("correction_from_target"), IID()),
    "no_zeroing_before_renormalise": (_rrs_variant("no_zeroing"), TopK()),
    "accepts_child_of_rejected_parent": (_rrs_variant("orphan"), IID()),
    "wo_children_checked_against_draft": (_rrs_variant("draft_for_wo"), WithoutReplacement()),
}
