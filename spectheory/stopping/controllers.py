r"""Engines' online draft-length controllers, as :class:`~spectheory.stopping.Policy` objects.

Each is reproduced from its engine's code or paper (the class docstrings say which) and runs
through the one round engine (``st.simulate(chain, T, policy)``, a
:class:`~spectheory.stopping.PolicyRound`); what it learns lives in the round's memory, one row
per run, updated by :meth:`Policy.update` from the round's
:class:`~spectheory.kinds.policy.context.RoundFeedback` (accepted and drafted counts, ``q`` of the
drafted tokens):

* :class:`ROCThreshold`: HuggingFace's assistant confidence threshold, re-tuned after every
  round on the ROC curve of (draft probability, accepted) pairs, cost ``FPR + 3 FNR``;
* :class:`AcceptanceRateK`: vLLM's per-sequence adaptive K (``DynamicProposer``), +-1 to keep
  the recent acceptance rate near a target;
* :class:`UCBGamma`: a UCB1 bandit over draft lengths (BanditSpec's UCBSpec);
* :class:`~spectheory.stopping.EMASteps` (:mod:`.adaptive_steps`): SGLang's adaptive
  speculative steps (an EMA of the accepted count between candidate lengths, with hysteresis).

Exact scoring (``docs/stopping.md`` §10): :class:`AcceptanceRateK` with ``window=1`` is Markov
in a finite memory (its ``K``): :func:`~spectheory.stopping.evaluate_policy` and
:func:`~spectheory.stopping.long_run_policy` are exact. The others carry unbounded statistics
(``memory_kind = "online"``): Monte Carlo only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..cost.base import Cost, as_cost
from ..kinds.policy.context import RoundFeedback, StopContext
from ..kinds.policy.policies import Policy, _threshold

__all__ = ["ROCThreshold", "AcceptanceRateK", "UCBGamma", "roc_threshold"]


def roc_threshold(
    probs: ArrayLike, labels: ArrayLike, count: ArrayLike, fp_weight: float = 1.0, fn_weight: float = 3.0
) -> np.ndarray:
    r"""Per row, the threshold minimising ``fp_weight FPR + fn_weight FNR`` on its first ``count`` samples.

    A sample is predicted positive when its probability is ``>= threshold`` (scikit-learn's
    ``roc_curve``); candidates are ``inf`` and the distinct probabilities, and ties go to the
    larger threshold (``np.argmin`` over ``roc_curve``'s decreasing thresholds, whose dropped
    collinear points never hold the first minimum). Rows without both labels get NaN.

    Parameters
    ----------
    probs, labels : arrays ``[R, W]``
        Scores and 0/1 labels (entries at and past ``count`` are ignored).
    count : int array ``[R]``

    Examples
    --------
    >>> from spectheory.stopping.controllers import roc_threshold
    >>> roc_threshold([[0.9, 0.8, 0.3, 0.2, 0.7, 0.1]], [[1, 1, 0, 0, 1, 0]], [6]).tolist()
    [0.7]
    """
    p = np.atleast_2d(np.asarray(probs, dtype=np.float64))
    y = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    c = np.asarray(count, dtype=np.int64).reshape(-1)
    R, W = p.shape
    valid = np.arange(W)[None, :] < c[:, None]
    key = np.where(valid, p, -np.inf)
    order = np.argsort(-key, axis=1, kind="stable")
    ps = np.take_along_axis(key, order, 1)
    ys = np.take_along_axis(np.where(valid, y, 0.0), order, 1)
    ns = np.take_along_axis(valid.astype(np.float64), order, 1) - ys
    P, N = ys.sum(1), ns.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = fp_weight * np.cumsum(ns, 1) / N[:, None] + fn_weight * (1.0 - np.cumsum(ys, 1) / P[:, None])
    nxt = np.concatenate([ps[:, 1:], np.full((R, 1), -np.inf)], axis=1)
    last_of_tie = (ps != nxt) & np.isfinite(ps)
    cost = np.where(last_of_tie, cost, np.inf)
    best = np.argmin(cost, axis=1)
    best_cost = cost[np.arange(R), best]
    th = np.where(
        best_cost < fn_weight, ps[np.arange(R), best], np.inf
    )  # inf: (FPR, TPR) = (0, 0), cost fn_weight
    return np.where((P > 0) & (N > 0), th, np.nan)


class ROCThreshold(Policy):
    r"""HuggingFace's assistant confidence threshold with its online ROC tuning.

    Reproduced from ``transformers`` (``src/transformers/generation/candidate_generator.py``,
    ``AssistedCandidateGenerator``): the assistant stops after a token whose probability
    ``q(x)`` is below ``assistant_confidence_threshold`` (default 0.4; ``ConfidenceCriteria``).
    ``_generate_candidates`` records ``q(x)`` of every drafted token; after verification
    ``update_candidate_strategy`` labels the first ``num_matches`` of them 1 and the next one 0
    (if any), drops the rest, and once there are more than 5 samples of both labels sets the
    threshold to the ``roc_curve`` threshold minimising ``FPR + 3 FNR`` (false positive: a
    rejected token above the threshold). Here one run is one ``generate`` call; the samples
    are kept in the run's memory (the last ``window`` of them; HF keeps all, the same while a
    run has at most ``window``). ``num_assistant_tokens`` is ``max_depth`` (HF's default
    schedule is ``"constant"``, 20 tokens).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import ROCThreshold
    >>> chain = st.DecodingChain.random(4, concentration=0.5, rng=0)
    >>> res = st.simulate(chain, 24, ROCThreshold(max_depth=6), 50, rng=0, cost=0.1)
    >>> bool(res.target_calls.mean() < 24)
    True
    """

    memory_kind = "online"
    #: Its update reads ``q`` of the first rejected drafted token (off the output path).
    reads_rejected_prob = True

    def __init__(
        self, initial: float = 0.4, max_depth: int = 20, window: int = 256, min_samples: int = 6
    ) -> None:
        self.initial = _threshold(initial, "initial", 0.0, 1.0)
        self.max_depth = check_int(max_depth, "max_depth", 1)
        self.window = check_int(window, "window", 2)
        self.min_samples = check_int(min_samples, "min_samples", 1)
        W = self.window
        # memory row: probabilities [W], labels [W], sample count, threshold
        self.initial_memory = np.r_[np.zeros(2 * W + 1), self.initial]

    def stop(self, ctx: StopContext) -> np.ndarray:
        return np.asarray(ctx.token_prob) < np.asarray(ctx.memory)[..., -1]

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        mem = np.array(memory, dtype=np.float64)
        R, W = mem.shape[0], self.window
        j = np.asarray(feedback.accepted, dtype=np.int64)
        k = np.asarray(feedback.drafted, dtype=np.int64)
        q = np.asarray(feedback.token_prob, dtype=np.float64)
        D = q.shape[1]
        new_n = j + (j < k)  # the accepted tokens, then the first rejected one
        cnt = mem[:, 2 * W].astype(np.int64)
        probs = np.concatenate([mem[:, :W], np.zeros((R, D))], axis=1)
        labels = np.concatenate([mem[:, W : 2 * W], np.zeros((R, D))], axis=1)
        rows, cols = np.nonzero(np.arange(D)[None, :] < new_n[:, None])
        probs[rows, cnt[rows] + cols] = q[rows, cols]
        labels[rows, cnt[rows] + cols] = (cols < j[rows]).astype(np.float64)
        total = cnt + new_n
        shift = np.maximum(total - W, 0)
        idx = np.arange(W)[None, :] + shift[:, None]
        mem[:, :W] = np.take_along_axis(probs, idx, 1)
        mem[:, W : 2 * W] = np.take_along_axis(labels, idx, 1)
        cnt = np.minimum(total, W)
        mem[:, 2 * W] = cnt
        th = roc_threshold(mem[:, :W], mem[:, W : 2 * W], cnt)
        tune = (cnt >= self.min_samples) & ~np.isnan(th)  # HF: more than 5 samples, both labels
        mem[:, -1] = np.where(tune, th, mem[:, -1])
        return mem

    def __repr__(self) -> str:
        return f"ROCThreshold({self.initial:g}, max_depth={self.max_depth})"


class AcceptanceRateK(Policy):
    r"""vLLM's per-sequence adaptive K: keep the recent acceptance rate near a target.

    Reproduced from vLLM pull request #26504 (``DynamicProposer``, method ``eagle_dynamic``,
    ``--acceptance-rate-threshold``; constants as in its ports: ``ACCEPTANCE_HISTORY_LEN = 10``,
    ``ACCEPTANCE_RATE_HYSTERESIS = 0.05``, ``MIN_HISTORY_FOR_ADJUSTMENT = 3``, threshold 0.7):
    each round records ``accepted / drafted``; once ``min_history`` rates are recorded, the mean
    of the last ``window`` moves ``K`` by +1 if ``>= threshold + hysteresis``, by -1 if
    ``<= threshold - hysteresis`` (within ``[min_k, max_depth]``). A round drafts ``K`` tokens.

    ``window=1, min_history=1`` makes ``K`` the whole memory (``memory_kind = "counts"``,
    ``K - 1`` in ``range(max_depth)``): exact over a finite horizon and in the long run. Otherwise
    the memory holds ``K``, the count and the last ``window`` rates (``"online"``: Monte Carlo).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import AcceptanceRateK, evaluate_policy
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> pol = AcceptanceRateK(max_depth=5, window=1, min_history=1)
    >>> exact = evaluate_policy(chain, pol, 16, 0.1)
    >>> sim = st.simulate(chain, 16, pol, 4000, rng=0, cost=0.1)
    >>> m, se = sim.mean_se("target_calls")
    >>> bool(abs(m - exact.target_calls) < 5 * se)
    True
    """

    def __init__(
        self,
        initial: int | None = None,
        max_depth: int = 10,
        threshold: float = 0.7,
        hysteresis: float = 0.05,
        window: int = 10,
        min_history: int = 3,
        min_k: int = 1,
    ) -> None:
        self.max_depth = check_int(max_depth, "max_depth", 1)
        self.min_k = check_int(min_k, "min_k", 1)
        if self.min_k > self.max_depth:
            raise ValueError(f"min_k: must be <= max_depth {self.max_depth}, got {min_k}")
        k0 = self.max_depth if initial is None else check_int(initial, "initial", 1)
        self.initial = int(np.clip(k0, self.min_k, self.max_depth))
        self.threshold = _threshold(threshold, "threshold", 0.0, 1.0)
        self.hysteresis = _threshold(hysteresis, "hysteresis", 0.0, 1.0)
        self.window = check_int(window, "window", 1)
        self.min_history = check_int(min_history, "min_history", 1)
        if self.window == 1 and self.min_history == 1:
            self.memory_kind = "counts"
            self.n_memory = self.max_depth
            self.initial_memory = self.initial - 1
        else:
            self.memory_kind = "online"
            # memory row: K, number of rates recorded, the last `window` rates (newest last)
            self.initial_memory = np.r_[float(self.initial), 0.0, np.zeros(self.window)]

    def _k(self, memory: np.ndarray) -> np.ndarray:
        m = np.asarray(memory)
        return m + 1 if self.memory_kind == "counts" else m[..., 0]

    def _move(self, k: np.ndarray, rate: np.ndarray) -> np.ndarray:
        up = rate >= self.threshold + self.hysteresis
        down = rate <= self.threshold - self.hysteresis
        return np.where(
            up, np.minimum(k + 1, self.max_depth), np.where(down, np.maximum(k - 1, self.min_k), k)
        )

    def stop(self, ctx: StopContext) -> np.ndarray:
        out = ctx.depth >= self._k(ctx.memory)
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(out), np.shape(ctx.state)))

    def round_length(self, memory: int) -> int | None:
        return int(memory) + 1 if self.memory_kind == "counts" else None

    def memory_after(self, memory: int, accepted: int, drafted: int) -> int:
        k = int(memory) + 1
        d = drafted if drafted > 0 else k  # drafted < k only at the end of the horizon
        return int(self._move(np.int64(k), np.float64(accepted / d))) - 1

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        j = np.asarray(feedback.accepted, dtype=np.float64)
        k = np.asarray(feedback.drafted, dtype=np.float64)
        rate = j / np.maximum(k, 1.0)
        if self.memory_kind == "counts":
            return (self._move(np.asarray(memory) + 1, rate) - 1).astype(np.int64)
        mem = np.array(memory, dtype=np.float64)
        mem[:, 2:] = np.concatenate([mem[:, 3:], rate[:, None]], axis=1)
        mem[:, 1] += 1
        n = np.minimum(mem[:, 1], self.window)
        mean = mem[:, 2:].sum(1) / n  # rates not yet recorded are 0 and left of the window
        ok = mem[:, 1] >= self.min_history
        mem[:, 0] = np.where(ok, self._move(mem[:, 0], mean), mem[:, 0])
        return mem

    def __repr__(self) -> str:
        return (
            f"AcceptanceRateK({self.initial}, max_depth={self.max_depth}, target={self.threshold:g}"
            f"+-{self.hysteresis:g}, window={self.window})"
        )


class UCBGamma(Policy):
    r"""A UCB1 bandit over draft lengths (BanditSpec's UCBSpec, Hou et al., ICML 2025).

    Arms are draft lengths ``gamma`` (BanditSpec's arms are drafting configurations; here the
    length, as in its draft-length experiments). A round drafts the chosen arm's ``gamma``
    (truncated at the horizon) and earns the reward ``(j + 1) / (c k + t(k))`` (tokens per unit
    time of the round under ``cost``; our choice of BanditSpec's speed reward), divided by its
    largest value ``max_gamma (gamma + 1) / (c gamma + t(gamma))`` so that rewards lie in
    ``[0, 1]``. Each arm is played once in order, then the arm maximising
    ``mean_a + scale sqrt(2 ln N / n_a)`` (UCB1; ``N`` rounds, ``n_a`` plays; ties: the first).
    The memory holds the counts, the reward sums and the current arm (``"online"``: Monte Carlo).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import UCBGamma
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> res = st.simulate(chain, 32, UCBGamma((1, 2, 4), cost=0.1), 100, rng=0, cost=0.1)
    >>> int(res.draft_tokens.min()) >= 7   # every arm is played at least once
    True
    """

    memory_kind = "online"

    def __init__(
        self, arms: ArrayLike = (1, 2, 3, 4, 6, 8), cost: Cost | float | None = None, scale: float = 1.0
    ) -> None:
        a = np.asarray(arms)
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer) or a.min() < 1:
            raise ValueError(f"arms: expected a non-empty 1-d list of draft lengths >= 1, got {arms!r}")
        self.arms = a.astype(np.int64)
        self.max_depth = int(self.arms.max())
        self.cost = as_cost(cost)
        self.scale = _threshold(scale, "scale")
        t = self.cost.call_times(self.max_depth)[self.arms - 1]
        self._time = self.cost.c * self.arms + t
        self._norm = float(np.max((self.arms + 1) / self._time))
        A = self.arms.size
        # memory row: plays [A], reward sums [A], rounds, current arm
        self.initial_memory = np.zeros(2 * A + 2)  # type: ignore[assignment]

    def stop(self, ctx: StopContext) -> np.ndarray:
        arm = np.asarray(ctx.memory)[..., -1].astype(np.int64)
        return ctx.depth >= self.arms[arm]

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        mem = np.array(memory, dtype=np.float64)
        A, R = self.arms.size, mem.shape[0]
        arm = mem[:, -1].astype(np.int64)
        k = np.asarray(feedback.drafted, dtype=np.int64)
        j = np.asarray(feedback.accepted, dtype=np.float64)
        t = self.cost.c * k + self.cost.call_times(self.max_depth)[k - 1]
        rows = np.arange(R)
        mem[rows, arm] += 1
        mem[rows, A + arm] += (j + 1) / t / self._norm
        mem[:, 2 * A] += 1
        plays, sums, N = mem[:, :A], mem[:, A : 2 * A], mem[:, 2 * A]
        with np.errstate(divide="ignore", invalid="ignore"):
            index = sums / plays + self.scale * np.sqrt(2.0 * np.log(N)[:, None] / plays)
        index = np.where(plays == 0, np.inf, index)
        mem[:, -1] = np.argmax(index, axis=1)
        return mem

    def __repr__(self) -> str:
        return f"UCBGamma({self.arms.tolist()}, c={self.cost.c:g})"
