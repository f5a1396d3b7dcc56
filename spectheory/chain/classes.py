r"""Closed communicating classes of a state process, and the check that long-run quantities need.

A stationary law is unique, and a long-run rate does not depend on the start, exactly when
the transition matrix ``P`` (``[S, S]``, rows are laws) has **one closed class**: a set
``C`` of states that all reach each other (a strongly connected component of the graph
``s -> s'`` when ``P[s, s'] > 0``) and that no transition leaves. States outside every closed
class are transient and are allowed (a unichain). With two closed classes or more the
stationary laws form a simplex (one extreme law per class) and the long-run rate depends
on which class the process falls into, so :func:`require_one_closed_class` refuses it with
a message naming the classes, instead of the bare ``LinAlgError: Singular matrix`` a linear
solve would raise.

Examples
--------
>>> import numpy as np
>>> from spectheory.chain import closed_classes
>>> P = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.5, 0.5]])
>>> [c.tolist() for c in closed_classes(P)]
[[0], [1, 2]]
>>> [c.tolist() for c in closed_classes([[0.5, 0.5], [0.0, 1.0]])]  # state 0 is transient
[[1]]
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.sparse.csgraph import connected_components

__all__ = ["closed_classes", "require_one_closed_class", "stationary_distribution"]


def closed_classes(matrix: ArrayLike | sp.spmatrix) -> list[np.ndarray]:
    """The closed communicating classes of a square non-negative matrix.

    Parameters
    ----------
    matrix : array_like or scipy sparse, shape (S, S)
        A transition matrix (only its support ``matrix > 0`` matters).

    Returns
    -------
    list of ndarray of int
        Each closed class as its sorted states, the classes ordered by their first state.
    """
    M = sp.csr_matrix(matrix)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"matrix: expected a square matrix, got shape {M.shape}")
    M.data = (M.data > 0).astype(np.int8)
    M.eliminate_zeros()
    n, labels = connected_components(M, directed=True, connection="strong")
    rows, cols = M.nonzero()
    leaves = np.zeros(n, dtype=bool)
    leaves[labels[rows[labels[rows] != labels[cols]]]] = True
    classes = [np.flatnonzero(labels == c) for c in range(n) if not leaves[c]]
    return sorted(classes, key=lambda c: int(c[0]))


def _describe(classes: list[np.ndarray], limit: int = 4) -> str:
    def one(c: np.ndarray) -> str:
        s = ", ".join(str(int(x)) for x in c[:8])
        return "{" + s + (", ..." if c.size > 8 else "") + "}"

    text = ", ".join(one(c) for c in classes[:limit])
    return text + (f" and {len(classes) - limit} more" if len(classes) > limit else "")


def require_one_closed_class(matrix: ArrayLike | sp.spmatrix, what: str, hint: str = "") -> None:
    """Raise a ``ValueError`` unless ``matrix`` has exactly one closed class.

    Parameters
    ----------
    matrix : array_like or scipy sparse, shape (S, S)
        The transition matrix of the process whose long-run behaviour is needed.
    what : str
        What needs it, for the message (e.g. ``"chain: the long-run rate"``).
    hint : str, optional
        What to do instead, appended to the message.

    Examples
    --------
    >>> from spectheory.chain import require_one_closed_class
    >>> require_one_closed_class([[0.5, 0.5], [0.5, 0.5]], "the stationary law")
    >>> require_one_closed_class([[1.0, 0.0], [0.0, 1.0]], "the stationary law")
    Traceback (most recent call last):
    ...
    ValueError: the stationary law needs states that reach one closed class, but there are 2 closed classes of states, {0}, {1}, which never communicate
    """
    classes = closed_classes(matrix)
    if len(classes) > 1:
        msg = (
            f"{what} needs states that reach one closed class, but there are {len(classes)} "
            f"closed classes of states, {_describe(classes)}, which never communicate"
        )
        raise ValueError(msg + (f"; {hint}" if hint else ""))


def stationary_distribution(matrix: ArrayLike) -> np.ndarray:
    """The law ``nu`` with ``nu P = nu`` of a dense stochastic matrix ``P`` with one closed class.

    Least squares on ``nu (P - I) = 0, sum(nu) = 1``, clipped at 0 and renormalised. The
    closed class is not checked (:func:`require_one_closed_class` does).

    Examples
    --------
    >>> from spectheory.chain.classes import stationary_distribution
    >>> stationary_distribution([[0.5, 0.5], [0.25, 0.75]]).round(12).tolist()
    [0.333333333333, 0.666666666667]
    """
    P = np.asarray(matrix, dtype=np.float64)
    S = P.shape[0]
    A = np.vstack([P.T - np.eye(S), np.ones((1, S))])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    nu = np.clip(np.linalg.lstsq(A, b, rcond=None)[0], 0.0, None)
    return nu / nu.sum()
