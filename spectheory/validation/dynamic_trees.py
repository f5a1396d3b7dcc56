r"""Dynamic draft trees (EAGLE-2, OPT-Tree) predicted along target-sampled paths, exactly given each path.

Notation: p = target, q = draft. Under ``tree_topk`` a node's children are the draft's top-k
tokens (fixed given the context) and child ``x_j`` is accepted exactly when the token the round
emits at that node is ``x_j``, where the emitted token (the accepted child, else the correction
from the residual) has the target's law ``p``. So, coupled to a path ``y`` of the target, a round
started after ``n`` tokens accepts the longest prefix of ``y_{n+1}, y_{n+2}, ...`` that is a root
path of the drafted tree and emits one more token of ``y`` (the correction, or the bonus token
at a leaf when ``n + j < T``): the round is a deterministic function of the path, and over
target-sampled paths the generation has the decoder's law (the decoder is lossless). The
prediction needs no verification coins: it is exact given the paths, with the standard error of
the mean over paths.

The drafted tree is the rule's selection (:meth:`~spectheory.trees.Eagle2Tree.select`, the code
that builds its trees on a chain and in the decoder,
:func:`~spectheory.decoder.dynamic_tree.dynamic_tree_generate`) on the draft's laws along the
rule's envelope, computed here level by level with plain causal forwards of the draft on the
context followed by each node's tokens (the decoder uses tree attention; the same laws up to
rounding). Replaying the decoder's own output through :func:`dynamic_tree_along_paths` gives
its rounds back, row by row.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._guards import check_int
from ..decoder.logits import logits_to_probs
from ..kinds.dynamic.rules import Candidates

if TYPE_CHECKING:
    from ..decoder.batching import CausalLM

__all__ = ["dynamic_tree_along_paths"]


def _last_laws(draft: Any, seqs: list, sampling: tuple, dev: Any, batch_size: int) -> np.ndarray:
    """The draft's law after each token sequence of ``seqs`` (right-padded causal forwards)."""
    out = []
    for lo in range(0, len(seqs), batch_size):
        chunk = seqs[lo : lo + batch_size]
        width = max(len(s) for s in chunk)
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        for i, s in enumerate(chunk):
            ids[i, : len(s)] = s
        last = torch.as_tensor([len(s) - 1 for s in chunk], device=dev)
        with torch.inference_mode():
            logits = draft(torch.as_tensor(ids, device=dev))
            rows = torch.arange(len(chunk), device=dev)
            out.append(logits_to_probs(logits[rows, last][:, None], *sampling)[:, 0].double().cpu().numpy())
    return np.concatenate(out)


def dynamic_tree_along_paths(
    draft: CausalLM,
    paths: np.ndarray,
    n_prompt: int,
    rule: Any,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    device: str | torch.device | None = None,
    batch_size: int = 1024,
) -> dict[str, np.ndarray]:
    """Per-path rounds of a draft-only dynamic tree rule along ``paths`` (module docstring).

    Parameters
    ----------
    draft : model of the decoder contract
    paths : int array, shape (N, L + T)
        Prompts of ``L = n_prompt`` tokens followed by ``T`` target-sampled tokens.
    n_prompt : int
    rule : Eagle2Tree or OptTree
        A rule with ``select`` and ``envelope`` (reads only the draft).
    sampling : (temperature, top_k, top_p)
        The draft's sampling options, as the decoder's.
    device : optional
    batch_size : int
        Sequences per draft forward.

    Returns
    -------
    dict of float arrays, shape (N,)
        ``target_calls`` (rounds), ``draft_tokens`` (drafted nodes the rule kept, within the
        tokens left) and ``accepted`` (accepted drafts) of each path's generation.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> from spectheory.trees import Eagle2Tree
    >>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> paths = np.array([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]])
    >>> out = dynamic_tree_along_paths(d, paths, 2, Eagle2Tree(3, top_k=2, depth=2))
    >>> bool(np.all(out["accepted"] + out["target_calls"] >= 4))  # T = 4 tokens per path
    True
    """
    for name in ("select", "envelope"):
        if not hasattr(rule, name):
            raise ValueError(
                f"rule: expected a draft-only dynamic tree rule (Eagle2Tree, OptTree), got {rule!r}"
            )
    paths = np.asarray(paths, dtype=np.int64)
    L = check_int(n_prompt, "n_prompt", 1)
    if paths.ndim != 2 or paths.shape[1] <= L:
        raise ValueError(f"paths: expected [N, L + T] with T >= 1 generated tokens, got {paths.shape}")
    N, T = paths.shape[0], paths.shape[1] - L
    from .lossless import model_device

    dev = device if device is not None else model_device(draft)
    env = rule.envelope(int(draft.vocab_size))
    width = max(len(k) for k in env.children)
    levels = [np.flatnonzero(env.depth == d) for d in range(env.max_depth + 1)]
    n = np.zeros(N, dtype=np.int64)
    calls, nodes, accepted = (np.zeros(N) for _ in range(3))
    while np.any(n < T):
        rows = np.flatnonzero(n < T)
        left = np.minimum(rule.depth(1), T - n[rows])  # the tree's depth within the tokens left
        tokens = np.zeros((rows.size, env.n_nodes), dtype=np.int64)
        laws: list[dict] = [{} for _ in rows]
        for d in range(int(left.max())):  # the laws of the envelope's level d, all rows at once
            want = [(i, int(u)) for i in np.flatnonzero(left > d) for u in levels[d]]
            seqs = [
                np.concatenate([paths[rows[i], : L + n[rows[i]]], tokens[i, env.path_to(u)]]) for i, u in want
            ]
            q = _last_laws(draft, seqs, sampling, dev, batch_size)
            for (i, u), qu in zip(want, q, strict=True):
                laws[i][u] = qu
                top = np.argsort(-qu, kind="stable")[:width]  # TopK's order, as Candidates.expand
                for j, kid in enumerate(env.children[u]):
                    tokens[i, kid] = top[j]
        for row, r in enumerate(rows):
            c = Candidates(partial(_law_of, laws[row]), partial(_child_of, env), 0)
            kept = {c.key[v] for v in rule.select(c, int(left[row]))}
            u, j = 0, 0
            while j < left[row]:
                nxt = [k for k in env.children[u] if k in kept and tokens[row, k] == paths[r, L + n[r] + j]]
                if not nxt:
                    break
                u, j = nxt[0], j + 1
            calls[r] += 1
            nodes[r] += len(kept)
            accepted[r] += j
            n[r] += j + int(n[r] + j < T)
    return {"target_calls": calls, "draft_tokens": nodes, "accepted": accepted}


def _law_of(laws: dict, u: Any, depth: int) -> np.ndarray:
    """The draft law after node ``u`` (a :class:`Candidates` law callback)."""
    return laws[u]


def _child_of(env: Any, u: Any, x: int, j: int) -> int:
    """Child ``j`` of node ``u`` in the envelope (a :class:`Candidates` child callback)."""
    return int(env.children[u][j])
