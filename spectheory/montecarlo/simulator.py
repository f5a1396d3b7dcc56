r"""Plain autoregressive sampling from the target (:func:`sample_target`), and the Monte Carlo
entry point re-exported from :mod:`spectheory.rounds` (:func:`simulate`, :class:`SimulationResult`).

Every round kind -- a path, a tree, batch decoding, a draft-length policy -- is simulated by the
one driver of :mod:`spectheory.rounds.driver` (``docs/architecture.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import as_rng, check_int
from ..kinds.path.round import CHUNK_ELEMS
from ..rounds.driver import progress_bar
from ..rounds.result import STATISTICS, SimulationResult
from ..rounds.sampler import ChainSampler, sample_initial
from ..rounds.standard_error import mean_and_se
from .simulate import simulate

__all__ = ["simulate", "sample_target", "SimulationResult", "mean_and_se", "STATISTICS"]


def sample_target(
    chain: Any, horizon: int, n_runs: int, rng: Any = None, progress: bool | None = None
) -> np.ndarray:
    r"""Plain autoregressive sampling from the target: tokens ``[n_runs, horizon]``.

    :math:`s_0 \sim` ``initial``, :math:`x_{n+1} \sim p_{n}(\cdot \mid s_n)`,
    :math:`s_{n+1} =` ``next_state[s_n, x_{n+1}]`` (kernel index ``n`` is 0-based; drawn from
    ``next_state[s_n, x_{n+1}, :]`` for stochastic transitions).

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.0, 1.0], [0.5, 0.5])
    >>> sample_target(chain, 3, 2, rng=0).tolist()
    [[1, 1, 1], [1, 1, 1]]
    """
    T = chain.check_horizon(horizon)
    N = check_int(n_runs, "n_runs", 1)
    rng = as_rng(rng)
    smp = ChainSampler(chain)
    tokens = np.empty((N, T), dtype=np.int64)
    chunk = max(1, min(N, CHUNK_ELEMS // max(1, 2 * chain.vocab_size)))
    with progress_bar(progress, N * T, "sample_target") as bar:
        for start in range(0, N, chunk):
            stop = min(N, start + chunk)
            s = sample_initial(chain, stop - start, rng)
            for n in range(T):
                x = smp.sample_target(n, s, rng.random(stop - start))
                tokens[start:stop, n] = x
                s = smp.next_states(s, x, rng)
                bar.update(stop - start)
    return tokens
