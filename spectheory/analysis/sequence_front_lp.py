r"""The linear program of the exact sequence-level front, and a hot-started HiGHS solver for it.

See :mod:`spectheory.analysis.sequence_front` for the program and docs/sequence_front.md for
its derivation. Notation: p = target, q = draft.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .sequence_front_tree import PrefixForest

__all__ = ["front_lp", "FrontSolver"]

#: Smallest budget handed to HiGHS (see :meth:`FrontSolver.solve`).
BUDGET_FLOOR = 1e-12


def front_lp(forest: PrefixForest) -> tuple[Any, Any, np.ndarray, Any, np.ndarray]:
    r"""The LP of the front with the budget's right-hand side left at 0: ``(c, A_ub, b_ub, A_eq, b_eq)``.

    Variables, all :math:`\ge 0`, in this order: the masses :math:`m` of the nodes of depth
    ``1..T`` (level by level, see :mod:`.sequence_front_tree`), one :math:`u` per node of
    depth ``1..T``, one :math:`w` per leaf. Rows:

    - ``A_eq``: for every node ``j`` of depth ``0..T-1``, the sum of its children's masses
      minus :math:`m_j` is 0 (at depth 0, :math:`m_j` is the start weight :math:`\pi`);
    - ``A_ub``: :math:`m_c - q(c \mid j)\, m_j - u_c \le 0` for every child ``c`` of ``j``
      (right-hand side :math:`\pi q` at depth 1), :math:`m_\ell - w_\ell \le P_T(\ell)` for
      every leaf, and, last, the budget :math:`\sum_\ell w_\ell \le \varepsilon`.

    Objective :math:`\sum u`. Every row has at most three non-zeros except the budget.
    """
    V, T = forest.vocab_size, forest.horizon
    sizes = forest.level_sizes()
    n_nodes = sum(sizes[1:])
    m_off = np.concatenate([[0], np.cumsum(sizes[1:])])  # depth-n node i is column m_off[n-1] + i
    u0, w0 = n_nodes, 2 * n_nodes
    n_var = 2 * n_nodes + sizes[T]
    er, ec, ev, b_eq = [], [], [], []
    row = 0
    for n in range(1, T + 1):
        child = np.arange(sizes[n])
        er.append(row + child // V)
        ec.append(m_off[n - 1] + child)
        ev.append(np.ones(sizes[n]))
        if n >= 2:
            par = np.arange(sizes[n - 1])
            er.append(row + par)
            ec.append(m_off[n - 2] + par)
            ev.append(-np.ones(sizes[n - 1]))
            b_eq.append(np.zeros(sizes[n - 1]))
        else:
            b_eq.append(forest.weights)
        row += sizes[n - 1]
    A_eq = sp.csr_matrix((np.concatenate(ev), (np.concatenate(er), np.concatenate(ec))), shape=(row, n_var))
    ur, uc, uv, b_ub = [], [], [], []
    row = 0
    for n in range(1, T + 1):
        child = np.arange(sizes[n])
        r = row + child
        ur += [r, r]
        uc += [m_off[n - 1] + child, u0 + m_off[n - 1] + child]
        uv += [np.ones(sizes[n]), -np.ones(sizes[n])]
        q = forest.draft[n - 1].ravel()
        if n >= 2:
            ur.append(r)
            uc.append(m_off[n - 2] + child // V)
            uv.append(-q)
            b_ub.append(np.zeros(sizes[n]))
        else:
            b_ub.append(np.repeat(forest.weights, V) * q)
        row += sizes[n]
    leaf = np.arange(sizes[T])
    ur += [row + leaf, row + leaf, np.full(sizes[T], row + sizes[T])]
    uc += [m_off[T - 1] + leaf, w0 + leaf, w0 + leaf]
    uv += [np.ones(sizes[T]), -np.ones(sizes[T]), np.ones(sizes[T])]
    b_ub += [forest.target_mass[T], np.zeros(1)]
    A_ub = sp.csr_matrix(
        (np.concatenate(uv), (np.concatenate(ur), np.concatenate(uc))), shape=(row + sizes[T] + 1, n_var)
    )
    c = np.zeros(n_var)
    c[u0:w0] = 1.0
    return c, A_ub, np.concatenate(b_ub), A_eq, np.concatenate(b_eq)


def _highs_core():
    """scipy's bundled HiGHS bindings (private; None when this scipy does not ship them)."""
    try:
        from scipy.optimize._highspy import _core

        _core._Highs, _core.HighsLp, _core.MatrixFormat  # noqa: B018 - probe the names we use
        return _core
    except (ImportError, AttributeError):  # pragma: no cover - depends on the scipy build
        return None


class FrontSolver:
    r"""Solves the front's LP at budget after budget, building the matrix once.

    With scipy's bundled HiGHS bindings the model is loaded once and each new budget only
    changes the budget row's bound, so HiGHS restarts the dual simplex from the previous
    optimal basis (*hot start*: a right-hand-side change keeps the basis dual feasible).
    Without them (``hot_start=False`` or another scipy), every budget is a fresh
    ``scipy.optimize.linprog(method="highs")`` on the same sparse matrices.

    :meth:`solve` returns ``(objective, leaf masses, budget dual)``; the dual is
    :math:`dR^*/d\varepsilon \le 0`.
    """

    def __init__(self, forest: PrefixForest, tol: float = 1e-10, hot_start: bool = True) -> None:
        self.c, self.A_ub, self.b_ub, self.A_eq, self.b_eq = front_lp(forest)
        self.n_leaf = forest.level_sizes()[-1]
        self.n_nodes = (self.c.size - self.n_leaf) // 2
        self.tol = float(tol)
        core = _highs_core() if hot_start else None
        self._core = core
        if core is not None:
            M = sp.vstack([self.A_eq, self.A_ub]).tocsc()
            lp = core.HighsLp()
            lp.num_col_, lp.num_row_ = self.c.size, M.shape[0]
            lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = self.c.size, M.shape[0]
            lp.a_matrix_.format_ = core.MatrixFormat.kColwise
            lp.col_cost_ = self.c
            lp.col_lower_ = np.zeros(self.c.size)
            lp.col_upper_ = np.full(self.c.size, np.inf)
            lp.row_lower_ = np.concatenate([self.b_eq, np.full(self.b_ub.size, -np.inf)])
            lp.row_upper_ = np.concatenate([self.b_eq, self.b_ub])
            lp.a_matrix_.start_ = M.indptr
            lp.a_matrix_.index_ = M.indices
            lp.a_matrix_.value_ = M.data
            h = core._Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("primal_feasibility_tolerance", self.tol)
            h.setOptionValue("dual_feasibility_tolerance", self.tol)
            h.setOptionValue("simplex_dual_edge_weight_strategy", 1)  # devex: ~20% faster here
            h.passModel(lp)
            self._highs = h
            self._budget_row = M.shape[0] - 1

    @property
    def hot(self) -> bool:
        """True when budgets after the first are hot-started."""
        return self._core is not None

    def solve(self, eps: float) -> tuple[float, np.ndarray, float]:
        """``(objective, leaf masses, budget dual)`` at budget ``eps``.

        The budget is floored at ``BUDGET_FLOOR``: at ``eps = 0`` the leaves must sum to
        the start weights *and* stay below the target's masses, whose float sum may miss the
        weights by an ulp (an exactly infeasible program); the floor moves the optimum by at
        most ``|slope| * 1e-12``. If the hot-started solve does not end optimal, the budget is
        solved afresh with ``linprog``.
        """
        leaves = slice(self.n_nodes - self.n_leaf, self.n_nodes)
        eps = max(float(eps), BUDGET_FLOOR)
        if self._core is not None:
            h = self._highs
            h.changeRowBounds(self._budget_row, -np.inf, eps)
            h.run()
            if h.getModelStatus() == self._core.HighsModelStatus.kOptimal:
                sol = h.getSolution()
                x = np.asarray(sol.col_value)
                dual = float(np.asarray(sol.row_dual)[self._budget_row])
                return float(self.c @ x), x[leaves], dual
        from scipy.optimize import linprog

        b_ub = self.b_ub.copy()
        b_ub[-1] = eps
        res = linprog(
            self.c,
            A_ub=self.A_ub,
            b_ub=b_ub,
            A_eq=self.A_eq,
            b_eq=self.b_eq,
            bounds=(0, None),
            method="highs",
            options={"primal_feasibility_tolerance": self.tol, "dual_feasibility_tolerance": self.tol},
        )
        if res.status != 0:
            raise RuntimeError(f"optimal_sequence_front: HiGHS failed at eps = {eps!r}: {res.message}")
        return float(res.fun), res.x[leaves], float(res.ineqlin.marginals[-1])
