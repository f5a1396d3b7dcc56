"""``st.simulate``: the one Monte Carlo entry point, for every round kind."""

from __future__ import annotations

from typing import Any

from ..cost.base import as_cost
from ..kinds.normalize import as_round
from ..rounds.driver import run_rounds
from ..rounds.result import SimulationResult

__all__ = ["simulate"]


def simulate(
    chain: Any,
    horizon: int,
    round: Any = None,
    n_runs: int = 1000,
    rng: Any = None,
    *,
    bonus: bool = True,
    verifier: Any = None,
    return_tokens: bool = False,
    progress: bool | None = None,
    cost: Any = None,
    gamma: int | None = None,
    tree: Any = None,
    policy: Any = None,
) -> SimulationResult:
    r"""Monte Carlo of the speculative decoding protocol for any round, vectorised over runs.

    Each of ``n_runs`` independent generations produces ``horizon`` tokens by rounds: a path of
    ``gamma`` drafts checked by a single-path verifier, a draft tree checked by a tree
    verifier, batch decoding's ``M`` drafts, or as many drafts as a draft-length policy
    decides (see :mod:`spectheory.rounds` and ``docs/protocol.md``). One driver plays them all
    (:func:`spectheory.rounds.driver.run_rounds`).

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
        Tokens per generation ``T >= 1`` (at most ``chain.max_horizon``).
    round : int, DraftTree, Policy or Round
        What a round drafts: an ``int`` is a path round's ``gamma``
        (:class:`~spectheory.kinds.PathRound`), a :class:`~spectheory.trees.DraftTree` a
        :class:`~spectheory.trees.TreeRound`, a :mod:`spectheory.stopping` policy a
        :class:`~spectheory.stopping.PolicyRound`; or a round object (e.g.
        :class:`~spectheory.trees.BatchRound`). ``gamma=``, ``tree=``, ``policy=`` are the
        same by keyword (give exactly one).
    n_runs : int
        Number of independent generations ``>= 1``.
    rng : seed or numpy Generator, optional
    bonus : bool
        Emit a bonus token from the target when no draft was rejected and tokens remain
        (Leviathan/Chen); ``False`` is the counting of Yin et al.
    verifier : str or verifier, optional
        With an ``int`` or a ``DraftTree``: the verifier (default ``"token"`` for a path,
        ``"tree_rrs"`` for a tree). A single-path verifier's fused fast path is used when it
        has one. Not with a ready-made round or a policy (token verification).
    return_tokens : bool
        Keep the generated tokens ``[n_runs, T]``.
    progress : bool or None
        One tqdm bar over the generated tokens; ``None`` shows it only after 3 s.
    cost : Cost or float, optional
        Cost the runs (:class:`~spectheory.rounds.Cost`; a number is the draft step cost
        ``c``): the result then has ``target_time`` and ``time``.

    Returns
    -------
    SimulationResult
        The same type for every round kind.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])      # draft == target
    >>> res = st.simulate(chain, horizon=10, gamma=4, n_runs=100, rng=0)
    >>> int(res.rejections.max()), int(res.target_calls.max())   # 5 tokens per round, no rejection
    (0, 2)
    >>> sorted(res.summary())[:3]
    ['accepted', 'draft_tokens', 'n_runs']
    >>> tree = st.simulate(chain, 10, st.DraftTree.from_branching([2, 1]), 100, rng=0)
    >>> tree.round, tree.accepted_counts.shape
    ('tree(DraftTree(size=4, depth=2, root_children=2), verifier=tree_rrs)', (100, 3))
    """
    if not callable(getattr(chain, "check_horizon", None)):
        raise TypeError(
            f"chain: expected a DecodingChain (e.g. st.DecodingChain(target, draft) or "
            f"st.DecodingChain.iid(target, draft)), got {type(chain).__name__}"
        )
    rnd = as_round(round, gamma=gamma, tree=tree, policy=policy, verifier=verifier)
    return run_rounds(
        chain,
        horizon,
        rnd,
        n_runs,
        rng,
        bonus=bonus,
        return_tokens=return_tokens,
        progress=progress,
        cost=None if cost is None else as_cost(cost),
    )
