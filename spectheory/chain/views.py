"""The exact values of a :class:`~spectheory.DecodingChain`: ``protocol`` (every expectation of
the protocol for any round -- a path, a tree, a batch of drafts, a draft-length policy -- in one
:class:`~spectheory.exact.ExactResult`) and the ``expected_*`` views of a path's. A mixin of
:class:`~spectheory.chain.decoding_chain.DecodingChain`; each round's :meth:`~spectheory.rounds.Round.exact`
calls its engine (:mod:`spectheory.exact`, :mod:`spectheory.trees`, :mod:`spectheory.stopping`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._guards import check_nonneg
from ..exact import expectations as analysis
from ..exact import iid_gap
from ..exact.result import ExactResult
from ..kinds.normalize import as_round
from ..verifiers.base import get_verifier

if TYPE_CHECKING:
    from .._protocols import ChainLike, ChainWithViews
    from ..exact.iid_gap import LeviathanGap
    from ..verifiers import Verifier

__all__ = ["ProtocolViews"]


def _path_view(field: str, doc: str) -> Callable[..., float]:
    """The method ``chain.expected_<field>(horizon, gamma, bonus, *, verifier)``: the
    ``field`` of :meth:`ProtocolViews.protocol` for a path of ``gamma`` drafts."""

    def view(
        self: ProtocolViews,
        horizon: int,
        gamma: int,
        bonus: bool = True,
        *,
        verifier: str | Verifier = "token",
    ) -> float:
        return getattr(self.protocol(horizon, gamma=gamma, bonus=bonus, verifier=verifier), field)

    view.__name__ = f"expected_{field}"
    view.__qualname__ = f"ProtocolViews.expected_{field}"
    view.__doc__ = doc
    return view


class ProtocolViews:
    """Exact-value methods of :class:`~spectheory.DecodingChain` (chains are immutable, so
    results are cached by :func:`spectheory.exact.expectations.protocol_result`)."""

    def protocol(
        self,
        horizon: int,
        round: Any = None,
        *,
        bonus: bool = True,
        verifier: Any = None,
        gamma: int | None = None,
        tree: Any = None,
        policy: Any = None,
        cost: Any = None,
        **options: Any,
    ) -> ExactResult:
        r"""Every exact expectation of the protocol over one generation of ``horizon`` tokens.

        ``round`` says what a round drafts, as in ``st.simulate``: an ``int`` is a path of
        ``gamma`` drafts checked by ``verifier`` (a registered name or a
        :class:`~spectheory.verifiers.Verifier`, default ``"token"``), a
        :class:`~spectheory.trees.DraftTree` a token tree checked by a tree verifier
        (``"tree_rrs"`` by default, ``"tree_rrs_wo"``, ``"tree_topk"``, ``"traversal"``), a
        :mod:`spectheory.stopping` policy as many drafts as the policy decides, or any
        :class:`~spectheory.rounds.Round` (:class:`~spectheory.kinds.PathRound`,
        :class:`~spectheory.trees.TreeRound`, :class:`~spectheory.trees.BatchRound`,
        :class:`~spectheory.stopping.PolicyRound`). ``gamma=``, ``tree=`` and ``policy=`` say
        the same by keyword (give exactly one). The round's :meth:`~spectheory.rounds.Round.exact`
        runs its engine (``docs/architecture.md``); path results are cached per chain (chains
        are immutable). ``bonus=True`` (the default everywhere: exact, Monte Carlo, decoder,
        command line) emits a target token after a fully accepted round; what is counted:
        ``docs/protocol.md``. ``cost`` (a number ``c`` or a :class:`~spectheory.cost.Cost`)
        is the result's default cost for ``time()`` and ``speedup()``, and the cost a policy
        is evaluated under; ``options`` go to the engine (e.g. ``method=`` for trees and
        policies).

        Returns
        -------
        ExactResult
            A :class:`~spectheory.exact.ProtocolResult` (a path;
            :class:`~spectheory.trees.TreeProtocolResult` for a tree,
            :class:`~spectheory.trees.BatchTreeResult` for the batch tree reading) or a
            :class:`~spectheory.stopping.PolicyValue`, with the names of every result type:
            ``target_calls``, ``rejections``, ``draft_tokens``, ``accepted``,
            ``tokens_per_call``, ``accepted_count_law`` (pooled over rounds), the per-position
            profiles ``round_starts`` and ``rejection_by_position``, ``time(cost)``,
            ``speedup(cost)`` and ``summary()``.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])      # acceptance 1/2
        >>> res = chain.protocol(12, 2)
        >>> round(res.tokens_per_call, 6), res.accepted_count_law.round(3).tolist()
        (1.670473, [0.5, 0.27, 0.23])
        >>> path = st.DraftTree.from_branching([1, 1])                  # a path as a tree
        >>> round(chain.protocol(12, path).tokens_per_call, 6)
        1.670473
        >>> from spectheory.stopping import FixedGamma
        >>> round(chain.protocol(12, FixedGamma(2), cost=0.1).tokens_per_call, 6)
        1.670473
        >>> round(chain.protocol(12, st.BatchRound(1, 2, reading="tree")).tokens_per_call, 6)
        1.670473
        """
        rnd = as_round(round, gamma=gamma, tree=tree, policy=policy, verifier=verifier)
        return rnd.exact(self, horizon, bonus=bonus, cost=cost, **options)

    def tv_profile(self, horizon: int) -> np.ndarray:
        r""":math:`E_{prefix \sim target}[\mathrm{TV}(p_n, q_n)]` for ``n = 1..T``, shape ``[T]``.

        Its sum is Yin et al.'s Theorem 1: the expected rejections with ``bonus=False``
        (every position a draft check), whatever ``gamma``; see :meth:`rejection_lower_bound`.
        """
        return analysis.tv_profile(cast("ChainLike", self), horizon)

    def rejection_lower_bound(self, horizon: int) -> float:
        """Theorem 1 = the Theorem 2 bound: ``tv_profile(T).sum()``; see
        :func:`spectheory.exact.expectations.rejection_lower_bound`."""
        return analysis.rejection_lower_bound(cast("ChainLike", self), horizon)

    expected_rejections = _path_view(
        "rejections",
        """``protocol(horizon, gamma, bonus=bonus, verifier=verifier).rejections``.

        With ``bonus=False`` and token verification it equals :meth:`rejection_lower_bound`
        (Theorem 1) for every ``gamma``; with ``bonus=True`` that sum is an upper bound.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
        >>> round(chain.expected_rejections(4, 2, bonus=False), 12)   # 4 * TV
        1.2
        """,
    )
    expected_target_calls = _path_view(
        "target_calls",
        """``protocol(...).target_calls``: expected rounds.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])  # always accepted
        >>> chain.expected_target_calls(10, 4)  # rounds emit 5, 5 tokens
        2.0
        """,
    )
    expected_draft_tokens = _path_view(
        "draft_tokens",
        """``protocol(...).draft_tokens``: each round at ``n0`` drafts ``min(gamma, T - n0)``.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
        >>> chain.expected_draft_tokens(7, 4)  # rounds at 0 (4 drafts) and 5 (2 drafts)
        6.0
        """,
    )

    def accepted_count_law(
        self,
        horizon: int,
        gamma: int,
        bonus: bool = True,
        *,
        verifier: str | Verifier = "token",
        per_state: bool = False,
    ) -> np.ndarray:
        """``protocol(...).accepted_count_law`` (pooled over rounds, shape ``[gamma + 1]``), or with
        ``per_state=True`` the law given the round's start state (token verification;
        :func:`spectheory.exact.expectations.accepted_count_per_state`)."""
        if per_state:
            return analysis.accepted_count_per_state(cast("ChainLike", self), horizon, gamma)
        return self.protocol(horizon, gamma=gamma, bonus=bonus, verifier=verifier).accepted_count_law

    def expected_tokens_per_call(
        self,
        horizon: int,
        gamma: int,
        bonus: bool = True,
        *,
        verifier: str | Verifier = "token",
        per_generation: bool = False,
    ) -> float:
        """``protocol(...).tokens_per_call`` (``T / E[calls]``, pooled), or with
        ``per_generation=True`` ``E[T / calls]`` (token-by-token rules;
        :func:`spectheory.exact.expectations.tokens_per_call_per_generation`).

        Leviathan's formula is the pooled mean of an untruncated round under i.i.d.
        acceptance; the end of the horizon truncates the last rounds, so even a one-state
        chain gives a slightly smaller value at finite ``T``.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
        >>> chain.expected_tokens_per_call(10, 4)
        5.0
        """
        if per_generation:
            return analysis.tokens_per_call_per_generation(
                cast("ChainLike", self), horizon, gamma, bonus, get_verifier(verifier).require_path()
            )
        return self.protocol(horizon, gamma=gamma, bonus=bonus, verifier=verifier).tokens_per_call

    def predicted_speedup(
        self, horizon: int, gamma: int, c: float, bonus: bool = True, *, verifier: str | Verifier = "token"
    ) -> float:
        r"""``protocol(...).speedup(c)``: :math:`T / (E[\text{calls}] + c\,E[\text{draft tokens}])`
        with ``c`` = draft step time / target call time.

        Examples
        --------
        >>> import spectheory as st
        >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
        >>> chain.predicted_speedup(10, 4, 0.0)
        5.0
        """
        return self.protocol(horizon, gamma=gamma, bonus=bonus, verifier=verifier).speedup(
            float(check_nonneg(c, "c"))
        )

    def sequence_law(
        self,
        horizon: int,
        gamma: int | None = None,
        bonus: bool = True,
        *,
        method: str = "speculative",
        verifier: str | Verifier = "token",
    ) -> np.ndarray:
        """Exact law of the generated sequence; see :func:`spectheory.exact.expectations.sequence_law`."""
        return analysis.sequence_law(
            cast("ChainLike", self),
            horizon,
            gamma=gamma,
            bonus=bonus,
            method=method,
            verifier=get_verifier(verifier),
        )

    def leviathan_gap(
        self, horizon: int, gamma: int, bonus: bool = True, c: float | None = None
    ) -> LeviathanGap:
        """Exact chain value vs Leviathan's i.i.d. formula; see :func:`spectheory.exact.iid_gap.leviathan_gap`."""
        return iid_gap.leviathan_gap(cast("ChainWithViews", self), horizon, gamma, bonus=bonus, c=c)
