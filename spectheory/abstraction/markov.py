r"""The Markov abstraction of real models: order-k chains fitted to model samples.

An order-``k`` chain replaces the models' next-token laws given the whole prefix by laws
given the last ``k`` tokens (its state). :func:`fit_order_k_chain` fits one to samples:

- target kernel at context ``c``: the average of the soft counts (the target's exact
  next-token laws, ``soft=True``, or one-hot counts of the sampled tokens, ``soft=False``)
  over the positions of *target* samples whose last ``k`` tokens are ``c``;
- draft kernel at ``c``: the same over *draft* samples (or any other paths given);
- sparse: only contexts seen in the target samples are states, plus all their suffixes;
  an unseen context backs off to its longest seen suffix (down to the empty context, the
  order-0 state), both for transitions and for draft kernels at contexts the draft samples
  never visited.

The chain's exact expectations (:mod:`spectheory.exact.expectations`) are then the Markov
abstraction's predictions; :func:`chain_predictions` collects the ones the decoder measures.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .._guards import check_int
from ..chain.decoding_chain import DecodingChain

__all__ = ["context_keys", "fit_order_k_chain", "chain_predictions"]


def context_keys(paths: np.ndarray, n_prompt: int, order: int, vocab_size: int = 256) -> np.ndarray:
    """Integer keys ``[N, T]`` of the last ``order`` tokens before each generated position.

    The key of context ``(c_1, ..., c_k)`` (oldest first) is ``sum_i c_i V**(k - i)``;
    order 0 gives all zeros. Requires ``order <= n_prompt``.

    Examples
    --------
    >>> context_keys([[1, 2, 3, 4]], n_prompt=2, order=2, vocab_size=10).tolist()
    [[12, 23]]
    """
    paths = np.asarray(paths, dtype=np.int64)
    k = check_int(order, "order", 0)
    L = check_int(n_prompt, "n_prompt", 1)
    if k > L:
        raise ValueError(f"order: must be <= n_prompt ({L}), got {k}")
    T = paths.shape[1] - L
    key = np.zeros((paths.shape[0], T), dtype=np.int64)
    for i in range(k):  # oldest first
        key = key * vocab_size + paths[:, L - k + i : L - k + i + T]
    return key


def _accumulate(keys, values, V):
    """Unique keys and the summed value rows ``[U, V]``."""
    uniq, inv = np.unique(keys.ravel(), return_inverse=True)
    sums = np.zeros((len(uniq), V))
    np.add.at(sums, inv, values.reshape(-1, V))
    return uniq, sums


def _soft(paths, laws, n_prompt, soft, V):
    if soft:
        return np.asarray(laws, dtype=np.float64)
    tokens = np.asarray(paths)[:, n_prompt:]
    return np.eye(V)[tokens]


def fit_order_k_chain(
    order: int,
    target_paths: np.ndarray,
    target_laws: np.ndarray,
    draft_paths: np.ndarray,
    draft_laws: np.ndarray,
    n_prompt: int,
    prompts: np.ndarray,
    soft: bool = True,
    smoothing: float = 1e-3,
    vocab_size: int = 256,
) -> DecodingChain:
    """Fit a sparse order-``k`` :class:`~spectheory.DecodingChain` to model samples.

    Parameters
    ----------
    order : int >= 0
    target_paths, draft_paths : int arrays [N, L + T] (prompt, then sampled tokens)
    target_laws, draft_laws : arrays [N, T, V]
        The model's next-token law at each generated position (used when ``soft``).
    n_prompt : int, the prompt length ``L`` (``>= order``)
    prompts : int array [P, L]; the initial state law is the empirical law of their contexts.
    soft : bool
        Soft counts (exact laws) or hard counts (one-hot sampled tokens).
    smoothing : float
        Added to every count of a hard-count fit (keeps kernels well defined).

    Returns
    -------
    DecodingChain with ``.contexts``: ``(order, key)`` of each state's context.
    """
    k = check_int(order, "order", 0)
    V = vocab_size
    tv_t = _soft(target_paths, target_laws, n_prompt, soft, V)
    tv_d = _soft(draft_paths, draft_laws, n_prompt, soft, V)
    alpha = 0.0 if soft else float(smoothing)
    # per order j: seen contexts (sorted keys) and summed counts, for target and draft
    t_tab, d_tab = [], []
    for j in range(k + 1):
        t_tab.append(_accumulate(context_keys(target_paths, n_prompt, j, V), tv_t, V))
        d_tab.append(_accumulate(context_keys(draft_paths, n_prompt, j, V), tv_d, V))
    # states: every seen target context of order j <= k (suffixes of seen contexts are seen)
    orders = np.concatenate([np.full(len(t_tab[j][0]), j) for j in range(k + 1)])
    keys = np.concatenate([t_tab[j][0] for j in range(k + 1)])
    offsets = np.cumsum([0] + [len(t_tab[j][0]) for j in range(k + 1)])
    S = len(keys)

    def lookup(j, q):
        """Index into order-j table of keys q, or -1 if unseen."""
        tab = t_tab[j][0]
        pos = np.clip(np.searchsorted(tab, q), 0, max(len(tab) - 1, 0))
        return np.where((len(tab) > 0) & (tab[pos] == q), pos, -1)

    def longest_state(key, length):
        """State of the longest seen suffix of contexts ``key`` of length ``length`` (arrays)."""
        state = np.full(key.shape, -1, dtype=np.int64)
        for j in range(k, -1, -1):
            ok = (length >= j) & (state < 0)
            if not ok.any():
                continue
            idx = lookup(j, key % (V**j))
            hit = ok & (idx >= 0)
            state = np.where(hit, offsets[j] + idx, state)
        return state

    target = np.zeros((S, V))
    draft = np.zeros((S, V))
    for j in range(k + 1):
        sl = slice(offsets[j], offsets[j + 1])
        target[sl] = t_tab[j][1] + alpha
        # draft kernel: longest suffix seen in the draft samples
        dk = np.full(len(t_tab[j][0]), -1)
        rows = np.zeros((len(t_tab[j][0]), V))
        for i in range(j, -1, -1):
            tab = d_tab[i][0]
            need = dk < 0
            if not need.any():
                break
            q = t_tab[j][0] % (V**i)
            pos = np.clip(np.searchsorted(tab, q), 0, max(len(tab) - 1, 0))
            hit = need & (len(tab) > 0) & (tab[pos] == q) if len(tab) else np.zeros_like(need)
            rows[hit] = d_tab[i][1][pos[hit]]
            dk = np.where(hit, i, dk)
        draft[sl] = rows + alpha
    target /= target.sum(1, keepdims=True)
    dsum = draft.sum(1, keepdims=True)
    draft = np.where(dsum > 0, draft / np.where(dsum > 0, dsum, 1.0), 1.0 / V)
    # transitions: append x, keep the last k tokens, back off to the longest seen suffix
    new_len = np.minimum(orders + 1, k)[:, None] * np.ones((1, V), dtype=np.int64)
    new_key = (keys[:, None] * V + np.arange(V)[None, :]) % (V**k) if k else np.zeros((S, V), np.int64)
    next_state = longest_state(new_key, new_len)
    # initial law: the prompts' contexts
    prompts = np.asarray(prompts, dtype=np.int64)
    pkey = np.zeros(len(prompts), dtype=np.int64)
    for i in range(k):
        pkey = pkey * V + prompts[:, prompts.shape[1] - k + i]
    init_states = longest_state(pkey, np.full(len(prompts), k))
    initial = np.bincount(init_states, minlength=S).astype(np.float64)
    initial /= initial.sum()
    chain = DecodingChain(target, draft, initial, next_state)
    chain.contexts = [(int(o), int(kk)) for o, kk in zip(orders, keys)]  # (order, key) per state
    return chain


def chain_predictions(
    chain: DecodingChain, horizon: int, gammas: Iterable[int], bonus_settings: Iterable[bool] = (False, True)
) -> dict:
    """The chain theory's values the decoder measures, per (gamma, bonus).

    Returns ``{(gamma, bonus): {"target_calls", "rejections", "draft_tokens", "counts"}}``
    (``counts[j]`` = expected rounds accepting ``j`` drafts), exact on the chain.
    """
    out = {}
    for g in gammas:
        for b in bonus_settings:
            calls = chain.expected_target_calls(horizon, g, bonus=b)
            out[(int(g), bool(b))] = {
                "target_calls": calls,
                "rejections": chain.expected_rejections(horizon, g, bonus=b),
                "draft_tokens": chain.expected_draft_tokens(horizon, g, bonus=b),
                "counts": np.asarray(chain.accepted_count_law(horizon, g, bonus=b)) * calls,
            }
    return out
