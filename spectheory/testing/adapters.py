r"""Ready adapters: engines' speculative samplers as verifiers the kit takes.

* :func:`hf_speculative_sampling` -- HuggingFace transformers' ``_speculative_sampling``
  (assisted generation), per round, logits in; its arguments are looked up at run time
  (they changed between releases).
* :func:`from_batched_probs` -- the ``[B, k, V]`` convention of vLLM-style rejection
  samplers: ``fn(target_probs [B, k, V], bonus_token_ids [B, 1], draft_probs [B, k, V],
  draft_token_ids [B, k]) -> output_token_ids [B, k+1]`` padded with ``-1``.

Both return a :class:`~spectheory.testing.reference.BatchedVerifier`: the kit calls its
``verify_batch`` once per instance. p = target, q = draft. The engines draw from torch's
global random state; inside :func:`~spectheory.testing.check_verifier` those draws come
from the kit (:mod:`spectheory.testing.torch_random`). Called outside the kit, an adapter
seeds torch from the ``rng`` it is given with ``torch.default_generator.manual_seed``
(about 1.5 us a call; ``torch.manual_seed`` also seeds every CUDA device and costs about
0.5 ms, which doubles the run time of a per-round adapter). torch is imported when an
adapter is built.

Examples
--------
>>> from spectheory.testing import check_verifier
>>> from spectheory.testing.adapters import hf_speculative_sampling
>>> report = check_verifier(hf_speculative_sampling(), n_samples=2000)  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import as_rng
from .reference import PAD, BatchedVerifier

if TYPE_CHECKING:
    import torch

__all__ = ["hf_speculative_sampling", "from_batched_probs", "find_hf_speculative_sampling"]

#: names HF releases used for the arguments of ``_speculative_sampling``
HF_KNOWN = (
    "candidate_input_ids",
    "candidate_logits",
    "candidate_length",
    "new_logits",
    "is_done_candidate",
    "last_assistant_token_is_eos",
    "max_matches",
)


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the engine adapters need PyTorch (pip install 'spectheory[hf]')") from exc
    return torch


def find_hf_speculative_sampling() -> Callable[..., Any]:
    """The installed transformers' ``_speculative_sampling`` (its module moved between releases)."""
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "hf_speculative_sampling() needs transformers (pip install 'spectheory[hf]')"
        ) from exc
    import importlib

    for mod in ("transformers.generation.candidate_generator", "transformers.generation.utils"):
        try:
            fn = getattr(importlib.import_module(mod), "_speculative_sampling", None)
        except ImportError:
            fn = None
        if fn is not None:
            return fn
    raise ImportError(
        "transformers has no _speculative_sampling in generation.candidate_generator or generation.utils"
    )


def _hf_tokens(res: Any) -> list:
    """The valid tokens of a ``_speculative_sampling`` return: a tensor, or a tuple whose first
    entry is the tokens and second (if any) ``n_matches``, which must equal ``len - 1``."""
    valid, n = (res[0], res[1] if len(res) > 1 else None) if isinstance(res, (tuple, list)) else (res, None)
    row = valid.reshape(-1).tolist()
    if n is not None and int(n) != len(row) - 1:
        raise ValueError(
            f"returned n_matches = {int(n)} with {len(row)} valid tokens (expected n_matches + 1)"
        )
    return row


class _TorchBatch:
    """Common torch plumbing: seeding outside the kit, threads, logits from probabilities."""

    def __init__(self, torch, threads):
        self.torch = torch
        self.threads = threads

    def enter(self, rng):
        from .torch_random import torch_is_routed

        torch = self.torch
        if not torch_is_routed():
            torch.default_generator.manual_seed(int(as_rng(rng).integers(2**63)))
        old = torch.get_num_threads()
        if self.threads and old != self.threads:
            torch.set_num_threads(self.threads)
        return old

    def exit(self, old):
        if self.torch.get_num_threads() != old:
            self.torch.set_num_threads(old)


def hf_speculative_sampling(
    fn: Callable[..., Any] | None = None,
    *,
    dtype: torch.dtype | None = None,
    threads: int | None = 1,
    name: str | None = None,
    flags: str = "tensor",
    kwargs: dict[str, Any] | None = None,
) -> BatchedVerifier:
    r"""Adapt HuggingFace's ``_speculative_sampling`` (one round, logits in) to the kit.

    The kit's laws become logits ``log(probs)`` (``-inf`` where a probability is 0, as a
    top-k processed logit); the function gets ``candidate_input_ids = [[0, *draft_tokens]]``
    (one context token), ``candidate_logits = log(draft_probs)[None]`` (``[1, k, V]``),
    ``candidate_length = k``, ``new_logits = log(target_probs)[None]`` (``[1, k+1, V]``) and,
    where the installed release has them, ``is_done_candidate`` and
    ``last_assistant_token_is_eos`` (False, as ``generate`` passes them: a bool tensor of shape
    ``[1]``, what its stopping criteria return; ``flags="python"`` passes plain bools) and
    ``max_matches=k``. It returns ``(valid_tokens [1, n+1], n_matches)``; forks that return
    more values (``(valid_tokens, n_matches, probs)``) or the tokens alone are read too, and
    an ``n_matches`` that disagrees with the tokens (``generate`` slices its cache with it)
    raises, which the kit reports under ``runs_without_error``.

    Parameters
    ----------
    fn : callable, optional
        The function to test (default: the installed transformers' one,
        :func:`find_hf_speculative_sampling`).
    dtype : torch.dtype, optional
        Logits dtype (default ``torch.float32``, as in generation).
    threads : int or None
        torch threads while the kit calls it (1 is fastest for these tiny tensors; the
        previous setting is restored). None leaves torch's setting alone.
    name : str, optional
    flags : {"tensor", "python"}
        Types of the boolean flags (see above).
    kwargs : dict, optional
        More keyword arguments for every call (e.g. ``{"assistant_ensemble_weight": 0.5}``, a
        lossy mode of recent releases: check it with ``check_verifier(..., lossy=True)``).

    Returns
    -------
    BatchedVerifier
    """
    torch = _torch()
    fn = find_hf_speculative_sampling() if fn is None else fn
    if flags not in ("tensor", "python"):
        raise ValueError(f"flags: expected 'tensor' or 'python', got {flags!r}")
    more = dict(kwargs or {})
    if not callable(fn):
        raise ValueError("fn: must be callable")
    params = inspect.signature(fn).parameters
    required = [
        p
        for p, v in params.items()
        if v.default is inspect.Parameter.empty
        and v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)
    ]
    unknown = [p for p in required if p not in HF_KNOWN]
    if unknown:
        raise ValueError(
            f"fn: required arguments {unknown} are not known HuggingFace _speculative_sampling "
            f"arguments {HF_KNOWN}"
        )
    dtype = torch.float32 if dtype is None else dtype
    plumbing = _TorchBatch(torch, threads)

    def verify_batch(target_probs, draft_probs, draft_tokens, rng):
        x = np.asarray(draft_tokens, dtype=np.int64)
        N, k = x.shape
        with np.errstate(divide="ignore"):
            tl = torch.from_numpy(np.log(np.asarray(target_probs, dtype=np.float64))).to(dtype)
            dl = torch.from_numpy(np.log(np.asarray(draft_probs, dtype=np.float64))).to(dtype)
        ids = torch.from_numpy(np.concatenate([np.zeros((N, 1), np.int64), x], axis=1))
        no = torch.zeros(1, dtype=torch.bool) if flags == "tensor" else False
        extra = {"is_done_candidate": no, "last_assistant_token_is_eos": no, "max_matches": k}
        extra = {a: v for a, v in extra.items() if a in params}
        extra.update(more)
        out = np.full((N, k + 1), PAD, dtype=np.int64)
        old = plumbing.enter(rng)
        try:
            with torch.inference_mode():
                for i in range(N):
                    row = _hf_tokens(
                        fn(
                            candidate_input_ids=ids[i : i + 1],
                            candidate_logits=dl[i : i + 1],
                            candidate_length=k,
                            new_logits=tl[i : i + 1],
                            **extra,
                        )
                    )
                    out[i, : len(row)] = row
        finally:
            plumbing.exit(old)
        return out

    return BatchedVerifier(verify_batch, PAD, name or getattr(fn, "__qualname__", "_speculative_sampling"))


#: argument roles of a vLLM-style sampler, recognised by name
_ROLES = {
    "target_probs": ("target", "prob"),
    "bonus_token_ids": ("bonus",),
    "draft_probs": ("draft", "prob"),
    "draft_token_ids": ("draft", "id"),
}
_ORDER = ("target_probs", "bonus_token_ids", "draft_probs", "draft_token_ids")


def _roles(fn):
    """Map each role to a parameter name of ``fn`` (None if the names are not recognised)."""
    target = fn.forward if hasattr(fn, "forward") else fn  # nn.Module: read forward's names
    try:
        params = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return None
    found = {}
    for role, words in _ROLES.items():
        hits = [
            p
            for p in params
            if all(w in p.lower() for w in words) and not (role == "draft_probs" and "id" in p.lower())
        ]
        if len(hits) != 1:
            return None
        found[role] = hits[0]
    return found


def from_batched_probs(
    fn: Callable[..., Any],
    *,
    bonus: bool = True,
    pad_value: int = -1,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    threads: int | None = None,
    name: str | None = None,
) -> BatchedVerifier:
    r"""Adapt a vLLM-style batched rejection sampler (``[B, k, V]`` probabilities) to the kit.

    ``fn(target_probs [B, k, V], bonus_token_ids [B, 1], draft_probs [B, k, V],
    draft_token_ids [B, k]) -> [B, k+1]`` token ids, padded with ``pad_value`` after the
    emitted tokens. The target's bonus row (the kit's ``target_probs[:, k]``) is not passed:
    the adapter draws ``bonus_token_ids`` from it with ``torch.multinomial`` (routed through
    the kit inside :func:`~spectheory.testing.check_verifier`). Arguments are passed by name
    when ``fn``'s parameter names show the roles (``target``+``prob``, ``bonus``,
    ``draft``+``prob``, ``draft``+``id``), otherwise positionally in the order above; an
    ``nn.Module`` works (its ``forward`` signature is read).

    Parameters
    ----------
    fn : callable
    bonus : bool
        False for samplers that never emit the bonus token (vLLM's
        ``disable_bonus_tokens=True``); the kit then reads outputs under that protocol.
    pad_value : int
    device : str or torch.device
    dtype : torch.dtype, optional
        Probability dtype (default ``torch.float32``).
    threads : int, optional
        torch threads during the call (restored after).
    name : str, optional

    Returns
    -------
    BatchedVerifier
        With ``bonus`` set, which :func:`~spectheory.testing.check_verifier` reads.

    Examples
    --------
    >>> from spectheory.testing import check_verifier
    >>> from spectheory.testing.adapters import from_batched_probs
    >>> from spectheory.testing.torch_adapter import vllm_style_sampler      # doctest: +SKIP
    >>> check_verifier(from_batched_probs(vllm_style_sampler), n_samples=2000).passed  # doctest: +SKIP
    True
    """
    torch = _torch()
    if not callable(fn):
        raise ValueError("fn: must be callable")
    roles = _roles(fn)
    dtype = torch.float32 if dtype is None else dtype
    dev = torch.device(device)
    plumbing = _TorchBatch(torch, threads)

    def verify_batch(target_probs, draft_probs, draft_tokens, rng):
        x = np.asarray(draft_tokens, dtype=np.int64)
        N, k = x.shape
        t = torch.as_tensor(np.asarray(target_probs), dtype=dtype, device=dev)
        args = {
            "target_probs": t[:, :k].contiguous(),
            "draft_probs": torch.as_tensor(np.asarray(draft_probs), dtype=dtype, device=dev),
            "draft_token_ids": torch.as_tensor(x, device=dev),
        }
        old = plumbing.enter(rng)
        try:
            with torch.no_grad():
                args["bonus_token_ids"] = torch.multinomial(t[:, k].float(), 1)
                if roles is None:
                    res = fn(*[args[r] for r in _ORDER])
                else:
                    res = fn(**{roles[r]: args[r] for r in _ORDER})
        finally:
            plumbing.exit(old)
        out = res.detach().to("cpu").numpy().astype(np.int64)
        return np.where(out == pad_value, PAD, out) if pad_value != PAD else out

    v = BatchedVerifier(verify_batch, PAD, name or getattr(fn, "__name__", type(fn).__name__))
    v.bonus = bool(bonus)
    return v
