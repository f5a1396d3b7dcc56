r"""Along-path prediction of any round: the visitor a round hands its data to.

An along-path prediction (:func:`~.cost_predict.predict_time`, ``spectheory tune``) reads three
things of a round: the *jump kernel* of its rounds along sampled target paths
(:mod:`~spectheory.validation.round_kernels`), the law of the draft depth it plays, and the shape of its forwards -- how
many draft calls of how many tokens a round of depth ``K`` makes and how many tokens the target
scores -- which :class:`~.cost_timing.DecoderTiming` prices. All three depend only on the decoder
loop that plays the round (one path of ``gamma`` tokens, a draft tree, a draft-length policy) and
on its plain data. So the predictors never ask a round its class: :func:`round_model` hands the
round the visitor :class:`AlongPath`, the round calls the entry that fits it with its own data,
and the entry returns the model the predictors read (:class:`PathRounds`, :class:`TreeRounds`,
:class:`PolicyRounds`). A round kind in a user's file needs one method::

    class MyRound(Round):
        def along_path(self, predictor):
            return predictor.path(self.gamma)

and a round that defines none is refused with
:class:`~spectheory.rounds.base.UnsupportedRoundError` naming it (:meth:`Round.require <spectheory.rounds.Round.require>`).

Per round of depth ``K`` (module docstring of :mod:`.cost_timing`):

==========  ==================================  =====================  ====================
model       draft calls (tokens x count)        draft steps            target scores
==========  ==================================  =====================  ====================
path        ``2 x 1``, ``1 x (K - 1)``          ``K``                  ``K + 1``
policy      as a path                           ``K``                  ``K + 1``
tree        ``2 x 1``, ``n_d x 1`` (``d < K``)  ``max(K, 1)``          ``sum_{d <= K} n_d``
==========  ==================================  =====================  ====================

Examples
--------
>>> from spectheory.kinds import PathRound
>>> m = round_model(PathRound(3))
>>> m.label, m.kind, m.draft_calls(3), m.scored(3)
('gamma=3', 'path', ((2, 1), (1, 2)), 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import check_int
from ..kinds.policy.policies import StopContext
from ..validation.round_kernels import path_kernel, policy_kernel, tree_kernel

__all__ = [
    "AlongPath",
    "RoundsModel",
    "PathRounds",
    "PolicyRounds",
    "TreeRounds",
    "round_model",
    "drafted_lengths",
    "drafted_length_law",
]


class RoundsModel:
    """What along-path prediction and the timing read of one round (an :class:`AlongPath` entry's
    answer). ``kind`` labels the round's family in ``tune``'s tables; ``keys`` are the
    :class:`~.cost_timing.DecoderTiming` overhead and step entries that price it, most specific
    first; ``keeps_laws`` / ``policy_depth`` say what the path sample must hold;
    ``first_call_scores_prompt``: the decoder's step of this round scores the prompt with the
    first round's drafts where the target takes ``logits_to_keep`` (no separate target prefill:
    :class:`~spectheory.decoder.path_step.PathStep`), which
    :meth:`~.cost_timing.DecoderTiming.prefill_seconds` prices."""

    kind = ""
    keys: tuple[str, ...] = ()
    keeps_laws = False
    first_call_scores_prompt = False
    policy_depth = 0
    max_depth = 0

    @property
    def label(self) -> str:
        """Short name of the configuration (``gamma=4``, ``tree 2x2x1``, ...)."""
        raise NotImplementedError

    def draft_calls(self, depth: float) -> tuple[tuple[int, Any], ...]:
        """``((tokens per row, number of calls), ...)`` of the draft forwards of a round of
        ``depth`` (none at depth 0: a plain target step of a draft that proposed nothing)."""
        return ((2, 1), (1, depth - 1)) if depth > 0 else ()

    def draft_steps(self, depth: float) -> float:
        """Draft steps (each adds ``o_step``) of a round of ``depth``."""
        return depth

    def target_calls(self, depth: float) -> tuple[tuple[int, Any], ...]:
        """``((tokens per row, weight), ...)`` of the target call (a fractional mean depth
        interpolates between the two calls around it)."""
        lo = int(np.floor(depth))
        w = depth - lo
        return ((lo + 1, 1 - w),) + (((lo + 2, w),) if w else ())

    def scored(self, depth: float) -> Any:
        """Tokens per row the target scores in a round of ``depth`` (the overheads' ``w``)."""
        return depth + 1

    def forward_sizes(self) -> tuple[int, ...]:
        """Tokens per row of the forwards the cost fits must cover (beside 1 and 2)."""
        return (int(self.max_depth) + 1,)

    def priced_depth(self, draft_calls: float) -> float:
        """The depth a measured run's rounds are priced at, from its draft calls per round."""
        return float(draft_calls)

    def kernel(self, sample: Any) -> tuple[np.ndarray, int]:
        """``(J [N, T, M, T + 1, M], initial memory)``: the jump kernel along ``sample``'s paths."""
        raise NotImplementedError

    def depth_laws(self, sample: Any, visits: np.ndarray) -> tuple[np.ndarray, Any]:
        """``(law [D + 1] of a round's draft depth, what each row drafts)`` from the expected
        ``visits [N, T, M]`` of round starts: ``D`` itself for a fixed depth (capped by the tokens
        left), a law per prompt for a policy (:func:`~.cost_rounds.batch_depth_law`)."""
        D, T = int(self.max_depth), sample.horizon
        depth = np.bincount(np.minimum(D, T - np.arange(T)), weights=visits.sum((0, 2)), minlength=D + 1)
        return depth / depth.sum(), D


class PathRounds(RoundsModel):
    """Rounds drafting one path of ``gamma`` tokens, checked token by token
    (:func:`~spectheory.validation.round_kernels.path_kernel`)."""

    kind, keys, first_call_scores_prompt = "path", ("path",), True

    def __init__(self, gamma: int, verifier: Any = None) -> None:
        self.gamma = self.max_depth = check_int(gamma, "gamma", 1)
        self.verifier = verifier

    @property
    def label(self) -> str:
        return f"gamma={self.gamma}"

    def kernel(self, sample: Any) -> tuple[np.ndarray, int]:
        caps = getattr(sample, "caps", None)
        if caps is not None:  # the draft's own caps, then gamma and the tokens left
            T = sample.horizon
            caps = np.minimum(caps, np.minimum(self.gamma, T - np.arange(T))[None, :])
        return path_kernel(sample.reject, self.gamma, caps=caps), 0

    def depth_laws(self, sample: Any, visits: np.ndarray) -> tuple[np.ndarray, Any]:
        caps = getattr(sample, "caps", None)
        if caps is None:
            return super().depth_laws(sample, visits)
        D, T = self.gamma, sample.horizon  # a draft that caps its proposals (prompt lookup)
        k = np.minimum(np.minimum(D, T - np.arange(T))[None, :], caps)
        depth = np.bincount(k.ravel(), weights=visits.sum(2).ravel(), minlength=D + 1)
        return depth / depth.sum(), D


class PolicyRounds(RoundsModel):
    """Rounds drafting until a draft-length ``policy`` stops (:func:`~spectheory.validation.round_kernels.policy_kernel`);
    priced as paths (overheads fall back to the path's)."""

    kind, keys, first_call_scores_prompt = "policy", ("policy", "path"), True

    def __init__(self, policy: Any, verifier: Any = None) -> None:
        self.policy, self.verifier = policy, verifier
        self.max_depth = self.policy_depth = int(policy.max_depth)

    @property
    def label(self) -> str:
        return f"policy {self.policy!r}"

    def kernel(self, sample: Any) -> tuple[np.ndarray, int]:
        if sample.policy_inputs is None:
            raise ValueError(
                "policies: the path sample has no draft statistics; sample with policy_depth > 0"
            )
        return policy_kernel({"reject": sample.reject, **sample.policy_inputs}, self.policy)

    def depth_laws(self, sample: Any, visits: np.ndarray) -> tuple[np.ndarray, Any]:
        rows, n_at, k, weight = drafted_lengths(sample, self.policy, visits)
        D = self.max_depth
        return _capped_law(k, sample.horizon - n_at, weight, D), _per_prompt_laws(sample, rows, k, weight, D)


class TreeRounds(RoundsModel):
    """Rounds drafting a :class:`~spectheory.trees.DraftTree` level by level, checked by a
    node-local ``verifier`` (its ``children``; :func:`~spectheory.validation.round_kernels.tree_kernel`)."""

    kind, keys, keeps_laws = "tree", ("tree",), True

    def __init__(self, tree: Any, verifier: Any) -> None:
        if tree is None:
            raise ValueError("tree: along-path prediction needs a fixed draft tree")
        self.tree, self.verifier = tree, verifier
        self.max_depth = int(tree.max_depth)
        self.widths = np.bincount(np.asarray(tree.depth), minlength=self.max_depth + 1)  # n_d

    @property
    def label(self) -> str:
        widths = self.widths
        branching = [int(widths[d + 1] // max(widths[d], 1)) for d in range(len(widths) - 1)]
        regular = all(widths[d + 1] == widths[d] * b for d, b in enumerate(branching))
        return "tree " + ("x".join(map(str, branching)) if regular else f"{self.tree.n_nodes} nodes")

    def draft_calls(self, depth: float) -> tuple[tuple[int, Any], ...]:
        return ((2, 1),) + tuple((int(self.widths[d]), 1) for d in range(1, int(round(depth))))

    def draft_steps(self, depth: float) -> float:
        return max(int(round(depth)), 1)

    def target_calls(self, depth: float) -> tuple[tuple[int, Any], ...]:
        return ((int(self.scored(depth)), 1),)

    def scored(self, depth: float) -> Any:
        return float(self.widths[: int(round(depth)) + 1].sum())

    def forward_sizes(self) -> tuple[int, ...]:
        return (int(self.tree.n_nodes), *(int(w) for w in self.widths[1:]))

    def priced_depth(self, draft_calls: float) -> float:
        return float(self.max_depth)  # a tree round drafts its whole tree

    def kernel(self, sample: Any) -> tuple[np.ndarray, int]:
        from ..validation.tree_decoding import draft_tables

        if sample.target_laws is None or sample.draft_laws is None:
            raise ValueError("trees: the path sample has no laws; sample with trees=True")
        tokens = sample.paths[:, sample.prompt_len :]
        tables = draft_tables(
            sample.target_laws, sample.draft_laws, tokens, self.tree, self.verifier.children
        )
        return tree_kernel(self.tree, tables, sample.horizon), 0


class AlongPath:
    """The visitor :meth:`~spectheory.rounds.Round.along_path` is handed: one entry per decoder
    loop, each taking the round's plain data and returning its :class:`RoundsModel`."""

    def path(self, gamma: int, verifier: Any = None) -> PathRounds:
        """A path of ``gamma`` drafted tokens (:class:`PathRounds`)."""
        return PathRounds(gamma, verifier)

    def policy(self, policy: Any, verifier: Any = None) -> PolicyRounds:
        """As many tokens as the draft-length ``policy`` drafts (:class:`PolicyRounds`)."""
        return PolicyRounds(policy, verifier)

    def tree(self, tree: Any, verifier: Any) -> TreeRounds:
        """A draft tree checked node by node by ``verifier`` (:class:`TreeRounds`)."""
        return TreeRounds(tree, verifier)


def round_model(rnd: Any) -> RoundsModel:
    """The :class:`RoundsModel` of ``rnd`` (a round, or a shorthand of
    :func:`~spectheory.kinds.as_round`; a model is returned as is). Raises
    :class:`~spectheory.rounds.base.UnsupportedRoundError` for a round without ``along_path``."""
    if isinstance(rnd, RoundsModel):
        return rnd
    from ..kinds.normalize import round_for

    return round_for("along_path", rnd, {}, (), "round_model").along_path(AlongPath())


def drafted_lengths(
    sample: Any, policy: Any, visits: np.ndarray, per_path: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Draft lengths a policy plays at round starts drawn from the visits: ``(path, n, k, weight)``, each ``[S]``.

    The decoder drafts before it verifies, so after a rejection the drafted length is set by the
    draft's *own* continuation, not by the output path. Round starts ``(n, memory)`` are drawn
    from each path's expected visits ``visits [N, T, M]`` (:func:`~.cost_rounds.rounds_law`;
    ``per_path`` per path), the draft continues ``D = policy.max_depth`` tokens from the path's
    prefix there, and the policy's stopping rule along that continuation gives ``k`` (not capped
    by the tokens left: ``min(k, T - n)`` is what the row drafts). A draw's ``weight`` is its
    path's expected number of rounds over ``per_path``: a law over rounds weights a path by how
    many rounds it takes, and paths the draft predicts well take fewer, longer rounds (weighting
    every path alike overstates the drafted length).
    """
    from ..validation.policy_predict import policy_path_inputs
    from ..validation.predict import sample_paths

    if sample.draft is None or sample.policy_inputs is None:
        raise ValueError("policies: the path sample has no draft statistics; sample with policy_depth > 0")
    N, T, M = visits.shape
    D = int(policy.max_depth)
    gen = np.random.default_rng(sample.seed)
    flat = visits.reshape(N, T * M)
    rounds = flat.sum(1)  # E[R_i], each path's expected rounds
    w = flat / rounds[:, None]
    per = check_int(per_path, "per_path", 1)
    picks = np.array([gen.choice(T * M, size=per, p=w[i]) for i in range(N)])  # [N, per]
    rows = np.repeat(np.arange(N), per)
    n_at, mem = np.divmod(picks.ravel(), M)
    k = np.full(len(rows), D)
    for n in np.unique(n_at):
        sel = np.flatnonzero(n_at == n)
        L = sample.prompt_len + int(n)
        dp = sample_paths(
            sample.draft,
            sample.paths[rows[sel], :L],
            D,
            int(gen.integers(2**31 - 1)),
            sampling=sample.sampling,
            device=sample.device,
        )
        own = policy_path_inputs(sample.draft, sample.draft, dp, L, sample.sampling, device=sample.device)
        S, none = len(sel), np.full((len(sel), 1), -1)
        alive = np.ones(S, bool)
        for i in range(1, D):
            ctx = StopContext(
                depth=i,
                position=np.full((S, 1), int(n)),
                start_state=none,
                prev_state=none,
                token=none,
                state=none,
                accept_prob=None,
                memory=mem[sel][:, None],
                **{key: own[key][:, i - 1, None] for key in ("top", "entropy", "token_prob")},
            )
            stop = alive & np.asarray(policy.stop(ctx), bool).reshape(S)
            k[sel[stop]] = i
            alive &= ~stop
    weight = rounds[rows] / per
    return rows, n_at, k, weight


def drafted_length_law(sample: Any, policy: Any, visits: np.ndarray, per_path: int = 4) -> np.ndarray:
    """Law ``[D + 1]`` of the draft length a policy plays in a round, capped by the tokens left
    (visit-weighted over round starts, :func:`drafted_lengths`)."""
    _, n, k, weight = drafted_lengths(sample, policy, visits, per_path)
    return _capped_law(k, sample.horizon - n, weight, int(policy.max_depth))


def _capped_law(k: np.ndarray, left: np.ndarray, weight: np.ndarray, D: int) -> np.ndarray:
    counts = np.bincount(np.minimum(k, left), weights=weight, minlength=D + 1)
    return counts / counts.sum()


def _per_prompt_laws(sample: Any, rows: np.ndarray, k: np.ndarray, weight: np.ndarray, D: int) -> np.ndarray:
    """Laws ``[P, D + 1]`` of a policy's uncapped draft length, one per prompt (``sample.prompt_of``).

    The batch's rows have their own prompts (row ``b`` has prompt ``b mod P``), and how long a
    confidence rule drafts depends on the text (at batch 1 only prompt 0 is decoded, so a law pooled
    over the prompts misstates its depth). :func:`~.cost_rounds.batch_depth_law` draws each row's length from its
    prompt's law and caps it by the row's tokens left.
    """
    group = np.zeros(sample.n_paths, np.int64) if sample.prompt_of is None else np.asarray(sample.prompt_of)
    counts = np.zeros((int(group.max()) + 1, D + 1))
    np.add.at(counts, (group[rows], k), weight)
    if (counts.sum(1) == 0).any():
        raise ValueError("per_path: too few round starts to give every prompt a drafted-length law")
    return counts / counts.sum(1, keepdims=True)
