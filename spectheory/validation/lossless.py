"""Losslessness of the real decoder, measured: exact two-token law and a chi-square test.

For a fixed prompt, the target's exact law of the next two tokens is

.. math:: P(x_1, x_2) = p(x_1 \\mid \\text{prompt})\\, p(x_2 \\mid \\text{prompt}, x_1),

computed for all ``V**2`` pairs with one forward pass over the prompt and one batched pass
over the ``V`` one-token extensions (p = target, after temperature/top-k/top-p). The
decoder's samples of two new tokens (independent sequences with distinct seeds) are
compared with it by Pearson's chi-square test, cells with expected count below
``min_expected`` pooled into one cell.

To show that the test has power, :data:`BROKEN_RULES` holds deliberately wrong acceptance
rules built from the decoder's own pure rule :func:`spectheory.decoder.verify.token_verify`
(nothing in the decoder is edited): the decoder looks its rule up at call time, and
:func:`substituted_rule` swaps it in for the duration of a ``with`` block.
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch
from scipy import stats as _stats

from .._validation import check_int
from ..decoder import verify as _verify
from ..decoder.sampling import logits_to_probs, sample_from_uniform

__all__ = ["model_device", "exact_two_token_law", "decoder_two_token_samples", "pooled_chisquare",
           "BROKEN_RULES", "broken_target_correction", "broken_draft_correction",
           "substituted_rule", "lossless_check"]


def model_device(model) -> torch.device:
    """The device of a model's first parameter or buffer (CPU if it has none)."""
    for t in list(model.parameters()) + list(model.buffers()):
        return t.device
    return torch.device("cpu")


@torch.inference_mode()
def exact_two_token_law(target, prompt, temperature=1.0, top_k=None, top_p=None, device="cpu"):
    r"""The target's exact joint law of the two tokens following ``prompt``.

    Parameters
    ----------
    target : model of the decoder contract (``target(ids [B, L]) -> logits [B, L, V]``)
    prompt : 1-d sequence of int token ids (non-empty)
    temperature, top_k, top_p : sampling options, as in the decoder

    Returns
    -------
    ndarray, float64, shape (V, V)
        ``law[x1, x2] = p(x1 | prompt) * p(x2 | prompt, x1)``; sums to 1.

    Examples
    --------
    >>> import torch
    >>> class Bigram(torch.nn.Module):
    ...     vocab_size, max_seq_len = 3, 16
    ...     def forward(self, ids, cache=None, start=None):
    ...         return torch.log(torch.tensor([[.5, .5, 0.], [0., .2, .8], [1., 0., 0.]]))[ids]
    >>> law = exact_two_token_law(Bigram(), [2])
    >>> law.round(3).tolist()
    [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    ids = torch.as_tensor(list(prompt), dtype=torch.long, device=device)
    if ids.ndim != 1 or ids.numel() == 0:
        raise ValueError("prompt: expected a non-empty 1-d sequence of token ids")
    law = lambda z: logits_to_probs(z, temperature, top_k, top_p)  # noqa: E731
    first = law(target(ids[None])[0, -1])                                  # [V]
    V = first.shape[-1]
    ext = torch.cat([ids[None].expand(V, -1), torch.arange(V, device=device)[:, None]], 1)
    second = law(target(ext)[:, -1])                                       # [V, V]
    joint = (first[:, None] * second).cpu().numpy().astype(np.float64)
    return joint / joint.sum()


def decoder_two_token_samples(target, draft, prompt, n_samples, gamma, seed=0, batch_size=4096,
                              temperature=1.0, top_k=None, top_p=None, device=None, dtype=None):
    """``n_samples`` independent pairs ``(x1, x2)`` from :func:`speculative_generate`.

    Sequence ``i`` uses seed ``seed + i`` (the decoder is batch invariant, so the batching
    does not change the samples). Returns an int64 array ``[n_samples, 2]``.
    """
    from ..decoder.speculative import speculative_generate
    n_samples = check_int(n_samples, "n_samples", 1)
    out = []
    for lo in range(0, n_samples, batch_size):
        b = min(batch_size, n_samples - lo)
        res = speculative_generate(target, draft, [list(prompt)] * b, 2, gamma, temperature=temperature,
                                   top_k=top_k, top_p=top_p, seed=seed + lo, device=device, dtype=dtype)
        out.append(np.stack(res.tokens))
    return np.concatenate(out).astype(np.int64)


def pooled_chisquare(samples, law, min_expected=5.0):
    """Pearson chi-square of categorical ``samples`` against ``law`` with small cells pooled.

    Cells with expected count ``n * law < min_expected`` are merged into one cell (kept
    only if its expected count is positive). A sample in a cell of probability 0 gives
    statistic ``inf`` and p-value 0.

    Parameters
    ----------
    samples : int array, shape (n,) of flat cell indices, or (n, d) (flattened C-order)
    law : array, any shape, sums to 1

    Returns
    -------
    dict with ``statistic``, ``dof``, ``pvalue``, ``cells`` (after pooling), ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> law = np.array([0.5, 0.3, 0.2])
    >>> x = np.random.default_rng(0).choice(3, size=2000, p=law)
    >>> pooled_chisquare(x, law)["pvalue"] > 1e-3
    True
    """
    law = np.asarray(law, dtype=np.float64)
    flat_law = law.ravel()
    s = np.asarray(samples, dtype=np.int64)
    if s.ndim == 2:
        s = np.ravel_multi_index(tuple(s.T), law.shape)
    elif s.ndim != 1:
        raise ValueError(f"samples: expected shape (n,) or (n, d), got {s.shape}")
    n = s.size
    if n == 0:
        raise ValueError("samples: empty")
    observed = np.bincount(s, minlength=flat_law.size).astype(np.float64)
    if np.any(observed[flat_law <= 0] > 0):
        return {"statistic": float("inf"), "dof": 0, "pvalue": 0.0, "cells": 0, "n": n,
                "impossible_samples": int(observed[flat_law <= 0].sum())}
    expected = n * flat_law
    big = expected >= min_expected
    obs = list(observed[big])
    exp = list(expected[big])
    rest = expected[~big].sum()
    if rest > 0:
        obs.append(observed[~big].sum())
        exp.append(rest)
    obs, exp = np.array(obs), np.array(exp)
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = max(len(obs) - 1, 1)
    return {"statistic": stat, "dof": int(dof), "pvalue": float(_stats.chi2.sf(stat, dof)),
            "cells": int(len(obs)), "n": int(n), "impossible_samples": 0}


# ----------------------------------------------------------------------------- broken rules
def _correct_from(verdict, laws, u_emit):
    """``verdict`` with every rejected row's correction redrawn from ``laws[row, n_accepted]``."""
    n = verdict.n_accepted.clamp(max=laws.shape[1] - 1)
    wrong = sample_from_uniform(laws.to(torch.float64)[torch.arange(len(n), device=n.device), n], u_emit)
    return _verify.Verdict(verdict.n_accepted, torch.where(verdict.rejected, wrong, verdict.next_token),
                           verdict.rejected)


def broken_target_correction(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus):
    """WRONG on purpose: accept with ``min(1, target/draft)`` but, after a rejection, draw the
    correction from ``target`` instead of the residual ``normalize(max(target - draft, 0))``.

    The first token's law becomes ``min(p, q) + TV * p`` instead of ``p``. Same signature
    as :func:`~spectheory.decoder.verify.token_verify`, whose verdict it modifies.
    """
    verdict = _verify.VERIFIERS["token"](target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus)
    return _correct_from(verdict, target_probs, u_emit)


def broken_draft_correction(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus):
    """WRONG on purpose: skip the residual — after a rejection, draw the correction from the
    ``draft`` law it was rejected under. The first token's law becomes ``min(p, q) + TV * q``."""
    verdict = _verify.VERIFIERS["token"](target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus)
    return _correct_from(verdict, draft_probs, u_emit)


#: Deliberately broken rules (name -> rule with the signature of ``token_verify``).
BROKEN_RULES = {"target_correction": broken_target_correction, "draft_correction": broken_draft_correction}


@contextlib.contextmanager
def substituted_rule(rule):
    """Within the block, ``speculative_generate(..., verifier="token")`` uses ``rule``.

    The decoder looks ``verify.token_verify`` up at call time; this swaps the module
    attribute and always restores it (not thread safe). ``rule=None`` changes nothing.
    """
    if rule is None:
        yield
        return
    saved = _verify.token_verify
    _verify.token_verify = rule
    try:
        yield
    finally:
        _verify.token_verify = saved


def lossless_check(target, draft, prompt, n_samples, gamma, seed=0, rule=None, min_expected=5.0,
                   batch_size=4096, device=None, dtype=None, law=None):
    """Chi-square test of the decoder's two-token samples against the target's exact law.

    ``rule``: ``None`` (the decoder's own rule) or a name in :data:`BROKEN_RULES` or a
    callable. ``law``: the exact law if already computed. Returns the dict of
    :func:`pooled_chisquare` plus ``tv_empirical`` (TV between the empirical and exact
    laws), ``gamma``, ``rule``.
    """
    name = rule if isinstance(rule, str) or rule is None else getattr(rule, "__name__", "custom")
    fn = BROKEN_RULES[rule] if isinstance(rule, str) else rule
    if isinstance(rule, str) and rule not in BROKEN_RULES:
        raise ValueError(f"rule: expected None or one of {sorted(BROKEN_RULES)}, got {rule!r}")
    dev = device if device is not None else model_device(target)
    if law is None:
        law = exact_two_token_law(target, prompt, device=dev)
    with substituted_rule(fn):
        samples = decoder_two_token_samples(target, draft, prompt, n_samples, gamma, seed=seed,
                                            batch_size=batch_size, device=device, dtype=dtype)
    out = pooled_chisquare(samples, law, min_expected)
    emp = np.bincount(np.ravel_multi_index(tuple(samples.T), law.shape), minlength=law.size) / len(samples)
    out.update(tv_empirical=float(0.5 * np.abs(emp - law.ravel()).sum()), gamma=int(gamma),
               rule=name or "decoder")
    return out
