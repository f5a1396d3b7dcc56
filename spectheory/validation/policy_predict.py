r"""Rao-Blackwellised predictions for draft-length policies in the real decoder (needs torch).

The fixed-gamma validation (:mod:`.predict`) samples target paths and runs the rounds as an
exact recursion given the per-position rejection probabilities along them. Adaptive rules
(HuggingFace's confidence threshold and +2/-1 schedule, an entropy rule) decide from the
draft's law along the drafted path, which -- wherever the decision matters, i.e. while every
drafted token is accepted -- *is* the output path. So one forward pass of each model along
target-sampled paths gives, per position, the rejection probability
``max(0, 1 - q(x_m)/p(x_m))`` and the top probability, entropy and ``q(x_m)`` of the draft law
(p = target, q = draft), and :func:`spectheory.stopping.along_paths.policy_round_dp` turns
them into the exact conditional expectation of every round statistic given the path.
Averaged over paths it is unbiased for the decoder's expected target calls and rejections;
tokens per call ``T / E[calls]`` gets a delta-method SE. Proof: ``docs/stopping.md`` §9.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._guards import check_int
from .._typing import RNGLike
from ..decoder.logits import logits_to_probs
from ..stopping.along_paths import policy_round_dp, ratio_mean_se
from ..stopping.coins_along_paths import controller_along_paths

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM
    from ..kinds.policy.policies import Policy

__all__ = ["policy_path_inputs", "predict_policy", "predict_controller", "measured_rates"]


@torch.inference_mode()
def policy_path_inputs(
    target: CausalLM,
    draft: CausalLM,
    paths: np.ndarray,
    n_prompt: int,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 256,
    device: str | torch.device | None = None,
    rejected_draws: int = 0,
    seed: int = 0,
) -> dict:
    """Per-position inputs of :func:`~spectheory.stopping.along_paths.policy_round_dp` along ``paths``.

    ``paths`` int64 ``[N, L + T]`` (prompt, then ``T`` generated tokens), ``n_prompt = L``.
    Returns float64 arrays ``[N, T]``: ``reject`` = ``max(0, 1 - q(x)/p(x))``, and of the
    draft law at each position ``top`` (largest probability), ``entropy`` (nats, computed in
    float64 as the decoder's policy hook does) and ``token_prob`` = ``q(x)``. With
    ``rejected_draws = S > 0`` also ``rejected_prob`` ``[N, T, S]``: ``q(y)`` of ``S`` draws
    ``y ~ (q - p)^+ / TV`` (the drafted token when position ``m`` is rejected; 0 where
    ``TV = 0``), seeded by ``seed``, for
    :func:`~spectheory.stopping.coins_along_paths.controller_along_paths`.
    """
    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    if paths.ndim != 2 or paths.shape[1] <= L:
        raise ValueError(f"paths: expected [N, L + T] with T >= 1 generated tokens, got {paths.shape}")
    from .lossless import model_device

    dev = device if device is not None else model_device(target)
    S = check_int(rejected_draws, "rejected_draws", 0)
    keys = ("reject", "top", "entropy", "token_prob") + (("rejected_prob",) if S else ())
    out: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    for lo in range(0, len(paths), batch_size):
        ids = torch.as_tensor(paths[lo : lo + batch_size], device=dev)
        pt = logits_to_probs(target(ids[:, :-1])[:, L - 1 :], *sampling).double()  # [b, T, V]
        pd = logits_to_probs(draft(ids[:, :-1])[:, L - 1 :], *sampling).double()
        x = ids[:, L:, None]
        px, qx = pt.gather(-1, x)[..., 0], pd.gather(-1, x)[..., 0]
        out["reject"].append(torch.clamp(1.0 - qx / px, min=0.0, max=1.0).cpu().numpy())
        out["top"].append(pd.max(-1).values.cpu().numpy())
        logq = torch.where(pd > 0, pd.clamp_min(1e-300).log(), torch.zeros_like(pd))
        out["entropy"].append((-(pd * logq).sum(-1)).cpu().numpy())
        out["token_prob"].append(qx.cpu().numpy())
        if S:
            excess = (pd - pt).clamp_min(0.0).cpu()  # [b, T, V]
            tv = excess.sum(-1, keepdim=True)
            law = torch.where(tv > 0, excess / tv.clamp_min(1e-300), torch.ones_like(excess))
            y = torch.multinomial(law.reshape(-1, law.shape[-1]), S, replacement=True, generator=gen)
            qy = pd.cpu().reshape(-1, law.shape[-1]).gather(1, y).reshape(*law.shape[:2], S)
            out["rejected_prob"].append(torch.where(tv > 0, qy, torch.zeros_like(qy)).numpy())
    return {k: np.concatenate(v).astype(np.float64) for k, v in out.items()}


def predict_policy(inputs: dict, policy: Policy, gamma: int | None = None) -> dict:
    r"""Predicted means over paths of ``policy``'s round statistics, with standard errors.

    Parameters
    ----------
    inputs : dict
        From :func:`policy_path_inputs` (or :func:`~spectheory.stopping.along_paths.chain_path_inputs`).
    policy : spectheory.stopping.Policy
        A runnable rule (fixed, confidence, entropy, HF schedule).
    gamma : int, optional
        The decoder's extra cap on the draft length.

    Returns
    -------
    dict: ``{stat: (mean, se)}`` for ``target_calls``, ``rejections``, ``full_rounds``,
    ``accepted``; ``tokens_per_call`` = ``T / mean(calls)`` with its delta-method SE
    (:func:`~spectheory.stopping.along_paths.ratio_mean_se`; ``T`` tokens per path, no eos);
    ``n_paths``; and ``per_path_calls`` (the conditional expectations, for pooling).
    """
    dp = policy_round_dp(
        inputs["reject"],
        policy,
        inputs.get("top"),
        inputs.get("entropy"),
        inputs.get("token_prob"),
        gamma=gamma,
    )
    N, T = np.shape(inputs["reject"])
    out: dict[str, Any] = {}
    for k in ("target_calls", "rejections", "full_rounds", "accepted"):
        v = dp[k]
        out[k] = (float(v.mean()), float(v.std(ddof=1) / np.sqrt(N)) if N > 1 else float("nan"))
    out["tokens_per_call"] = ratio_mean_se(np.full(N, float(T)), dp["target_calls"])
    out["n_paths"] = int(N)
    out["per_path_calls"] = dp["target_calls"]
    return out


def _rates(calls: np.ndarray, time: np.ndarray, T: int) -> dict:
    out: dict[str, Any] = {"tokens_per_call": ratio_mean_se(np.full(calls.size, float(T)), calls)}
    if np.all(np.isfinite(time)):
        out["time_per_token"] = (float(time.mean() / T), float(time.std(ddof=1) / np.sqrt(time.size) / T))
    else:
        out["time_per_token"] = (float("nan"), float("nan"))
    return out


def predict_controller(
    inputs: dict,
    policy: Policy,
    c: float = 0.0,
    gamma: int | None = None,
    n_coins: int = 8,
    rng: RNGLike = None,
) -> dict:
    r"""Predicted tokens per call and time per token of any runnable controller, with SEs.

    Path-conditional: :func:`~spectheory.stopping.coins_along_paths.controller_along_paths`
    plays the controller ``n_coins`` times on each path's verification coins, so the engines'
    online controllers (ROC threshold, adaptive K, SGLang's steps, the bandit) are predicted
    from the same one pass of each model as the exact rules. Time is in units of a target call:
    ``c`` per draft step plus 1 per call, per generated token. SEs are over paths (the coin
    means per path are i.i.d.); ``tokens_per_call`` by the delta method.

    Parameters
    ----------
    inputs : dict
        From :func:`policy_path_inputs` (with ``rejected_draws`` for
        :class:`~spectheory.stopping.ROCThreshold`) or
        :func:`~spectheory.stopping.along_paths.chain_path_inputs`.
    policy : spectheory.stopping.Policy
    c : float
        Draft step cost relative to a target call.
    gamma : int, optional
        The decoder's extra cap on the draft length.
    n_coins : int
    rng : seed or Generator

    Returns
    -------
    dict: ``tokens_per_call``, ``time_per_token`` (each ``(mean, se)``; time is NaN for rules
    whose stops read the draft's law, whose drafts past a rejection leave the path),
    ``target_calls`` ``(mean, se)``, ``n_paths``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.stopping import FixedGamma
    >>> pred = predict_controller({"reject": np.zeros((3, 6))}, FixedGamma(2), c=0.5, rng=0)
    >>> pred["tokens_per_call"][0], pred["time_per_token"][0]
    (3.0, 0.6666666666666666)
    """
    T = int(np.shape(inputs["reject"])[1])
    sim = controller_along_paths(inputs, policy, n_coins, rng, gamma, cost=float(c))
    calls = sim["target_calls"]
    out = _rates(calls, sim["time"], T)
    out["target_calls"] = (float(calls.mean()), float(calls.std(ddof=1) / np.sqrt(calls.size)))
    out["n_paths"] = int(calls.size)
    return out


def measured_rates(target_calls: np.ndarray, draft_tokens: np.ndarray, horizon: int, c: float = 0.0) -> dict:
    """The decoder's measured ``tokens_per_call`` and ``time_per_token`` (``(mean, se)``) from its
    per-row ``target_calls`` and ``draft_tokens`` (``res.stats``), ``horizon`` tokens per row, time
    ``c`` per draft step plus 1 per call, as :func:`predict_controller` states them.

    Examples
    --------
    >>> measured_rates([2, 2], [4, 4], 6, c=0.5)["time_per_token"]
    (0.6666666666666666, 0.0)
    """
    calls = np.asarray(target_calls, dtype=np.float64)
    drafts = np.asarray(draft_tokens, dtype=np.float64)
    T = check_int(horizon, "horizon", 1)
    return _rates(calls, float(c) * drafts + calls, T)
