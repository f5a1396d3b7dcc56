r"""The exact checks of the chain kit, for tree verifiers (called by :func:`~.trees.check_tree_verifier`).

A tree verifier ``verify(tree, tokens, target_laws, draft_laws, rng) -> (node, token)`` is run

* on the sampled trees inside :func:`~spectheory.testing.randomness.kit_randomness` (torch and
  Python's ``random`` routed, global states watched: ``uncontrolled_randomness``, ``reseeding``);
* on :data:`N_FORCED` fresh trees with every uniform forced to 0 and then to its largest value
  below 1 (numpy ``rng`` and routed draws): no error, a node of the tree, a token in ``[0, V)``,
  no token of target probability 0 on the emitted path (``forced_uniforms``);
* twice on :data:`N_DETERMINISM` trees with the same seed (``determinism``);

and its mean accepted length is tested against the tree optimum (``above_optimum``,
:func:`spectheory.trees.optimum.tree_optimum`) and the library's standard rule
(``mean_accepted``) by :func:`optimum_problems`, with one-sided Bernstein tests
(:mod:`spectheory.testing.stat_tests`) whose variance bounds hold for every law of the null
(Bhatia-Davis: a variable in ``[0, D]`` of mean ``m`` has variance at most ``m (D - m)``).

Each returns a problem string or None.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from ._verdicts import randomness_findings
from .instances import constant_uniform_rng
from .randomness import RandomRecord, kit_randomness
from .stat_tests import bernstein_lower_test, bernstein_upper_test

__all__ = [
    "N_FORCED",
    "N_DETERMINISM",
    "path_problem",
    "forced_problem",
    "determinism_problem",
    "randomness",
    "optimum_problems",
]

N_FORCED = 16
N_DETERMINISM = 8


def path_problem(tree: Any, tok: np.ndarray, t_laws: np.ndarray, node: Any, y: Any) -> str | None:
    """Why an output is wrong (shape, range, a token of target probability 0), or None."""
    R, N = tok.shape
    V = t_laws.shape[-1]
    node, y = np.asarray(node), np.asarray(y)
    if node.shape != (R,) or y.shape != (R,) or node.dtype.kind not in "iu" or y.dtype.kind not in "iu":
        return f"returned node {node.dtype} {node.shape} and token {y.dtype} {y.shape}, expected int ({R},)"
    for r in range(R):
        u = int(node[r])
        if not 0 <= u < N or (u > 0 and tok[r, u] < 0):
            return f"row {r}: node {u} is not a drafted node of the tree"
        if not 0 <= int(y[r]) < V:
            return f"row {r}: token {int(y[r])} out of range [0, {V})"
        path = tree.path_to(u)
        prev = [0] + list(path[:-1]) if len(path) else []
        for a, b in zip(prev, path, strict=True):
            if t_laws[r, a, tok[r, b]] == 0:
                return f"row {r}: accepted draft {int(tok[r, b])} at node {b} has target probability 0"
        if t_laws[r, u, int(y[r])] == 0:
            return f"row {r}: emitted token {int(y[r])} after node {u} has target probability 0"
    return None


def forced_problem(verify: Callable[..., Any], tree: Any, draft: Callable[..., Any]) -> str | None:
    """Run on fresh trees (``draft(n) -> tok, t_laws, d_laws``) with forced uniforms."""
    tok, t_laws, d_laws = draft(N_FORCED)
    for which in ("low", "high"):
        what = f"with uniforms forced to {'0' if which == 'low' else 'their largest value below 1'}"
        try:
            with kit_randomness(force=which):
                node, y = verify(tree, tok, t_laws, d_laws, constant_uniform_rng(which))
        except Exception as exc:  # noqa: BLE001 - any failure of the user's code is a finding
            return f"raised {exc!r} {what}: {traceback.format_exc(limit=2).strip().splitlines()[-1]}"
        why = path_problem(tree, tok, t_laws, node, y)
        if why:
            return f"{why} {what} (rng = spectheory.testing.instances.constant_uniform_rng({which!r}))"
    return None


def determinism_problem(
    verify: Callable[..., Any], tree: Any, draft: Callable[..., Any], seed: int, records: list
) -> str | None:
    """Two runs with ``numpy.random.default_rng(seed)`` (and the kit's streams) must agree."""
    tok, t_laws, d_laws = draft(N_DETERMINISM)
    outs = []
    for _ in range(2):
        try:
            with kit_randomness(seed) as rec:
                node, y = verify(tree, tok, t_laws, d_laws, np.random.default_rng(seed))
        except Exception:  # noqa: BLE001 - reported by the other checks
            return None
        records.append(rec)
        outs.append((np.asarray(node).tolist(), np.asarray(y).tolist()))
    if outs[0] != outs[1]:
        return f"two runs with rng = numpy.random.default_rng({seed}) differ: {outs[0]} then {outs[1]}"
    return None


def randomness(records: list[RandomRecord], name: str) -> tuple[str | None, str]:
    """``(failure, note)`` of ``uncontrolled_randomness`` and ``reseeding`` over the runs."""
    found = randomness_findings(records, name, 0)
    fails = [f.summary for f in found.values() if not f.passed]
    return ("; ".join(fails) or None), found["uncontrolled_randomness"].note


def optimum_problems(
    chain: Any,
    tree: Any,
    children: Any,
    acc: np.ndarray,
    standard: float | None,
    a_i: float,
    efficiency: bool,
) -> dict[str, Any]:
    """Row entries ``optimum``, ``optimum_kind``, ``above_optimum`` and ``mean_accepted`` of one instance.

    ``acc`` are the accepted depths (in ``[0, D]``), ``standard`` the smallest exact mean of the
    library's tree rules with the same child policy (None: no such rule). The upper
    test uses the variance bound ``mu (D - mu)`` (``D^2 / 4`` past ``D / 2``), which every
    law on ``[0, D]`` of mean ``<= mu`` obeys; the lower test its mirror.
    """
    from ..trees.optimum import tree_optimum

    D = float(tree.max_depth)
    n, mean = int(acc.size), float(np.mean(acc))
    out: dict[str, Any] = {
        "optimum": None,
        "optimum_kind": None,
        "above_optimum": None,
        "mean_accepted": None,
    }
    try:
        opt = tree_optimum(chain, tree, children)
    except ValueError:  # too large to solve exactly: no optimum test
        opt = None
    if opt is not None:
        mu = opt.value
        res = bernstein_upper_test(mean, n, mu, mu * (D - mu) if mu <= D / 2 else D * D / 4, D, a_i)
        out.update(optimum=mu, optimum_kind=opt.kind)
        if not res.passed:
            out["above_optimum"] = (
                f"accepts more than the lossless optimum ({opt.kind}): cannot be lossless; {res.summary}"
            )
    if efficiency and standard is not None:
        mu = standard
        res = bernstein_lower_test(mean, n, mu, mu * (D - mu) if mu >= D / 2 else D * D / 4, D, a_i)
        if not res.passed:
            out["mean_accepted"] = (
                f"accepts less than the library's tree rules with this child policy: {res.summary}"
            )
    return out
