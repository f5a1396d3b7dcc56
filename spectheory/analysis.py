r"""Exact expectations and laws of speculative decoding on a :class:`DecodingChain`.

All results are float64 and exact up to rounding (no sampling).
"""
from __future__ import annotations

import numpy as np

__all__ = ["tv_profile"]


def tv_profile(chain, horizon) -> np.ndarray:
    r"""Expected TV between target and draft at each position under target prefixes.

    .. math:: \mathrm{tv}_n = E_{s_{n-1} \sim p}\big[\mathrm{TV}(p_n(\cdot|s_{n-1}), q_n(\cdot|s_{n-1}))\big], \quad n = 1..T.

    Returns
    -------
    ndarray, shape (T,)

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
    >>> chain.tv_profile(3).round(6).tolist()
    [0.3, 0.3, 0.3]
    """
    T = chain.check_horizon(horizon)
    marg = chain.state_marginals(T)
    tvs = chain.tv_table
    if chain.is_homogeneous:
        return marg @ tvs
    return np.einsum("ns,ns->n", marg, tvs[:T])
