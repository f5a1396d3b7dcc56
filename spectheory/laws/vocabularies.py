r"""Drafts with a different vocabulary: merged-token drafts and Token-Level Intersection (TLI).

Notation: the target's vocabulary ``V_t`` (here bytes), the draft's ``V_d``, whose tokens are
*strings* of target tokens (single bytes and merged tokens such as ``b"th"``); ``q_d(v | s)``
the draft's law over ``V_d``, ``p(x | s)`` the target's over ``V_t``.

**TLI** (Timor et al., ICML 2025, arXiv 2502.05202, "token-level intersection"; as shipped in
Hugging Face transformers' universal assisted generation, ``AssistantToTargetTranslator``:
the draft's tokens outside the target vocabulary are suppressed, ``-inf`` logits, the drafted
ids are mapped to target ids and the draft's logits into the target vocabulary, then the usual
speculative sampling runs). The draft therefore samples from its law restricted to the shared
tokens ``I = V_d ∩ V_t`` and renormalised,

.. math:: q_I(x \mid s) = \frac{q_d(x \mid s)\, 1[x \in I]}{q_d(I \mid s)}, \qquad x \in V_t,

and the round is token verification of ``q_I`` against ``p``. So TLI is lossless (token
verification is, for any draft law over ``V_t``) and its acceptance at a state is
:math:`\sum_x \min(p, q_I)(x \mid s)`; :func:`tli_draft_law` gives ``q_I``, and a
:class:`~spectheory.DecodingChain` with it runs TLI in every engine (``verifier="token"``).
The paper's other two rules (string-level exact match, SLEM, and string-level rejection
sampling) are not implemented: their algorithms were not in the sources available here.

**A merged-token draft from a corpus** (:func:`merged_token_counts`): the draft vocabulary is
the 256 bytes plus ``merges`` (byte strings of length >= 2); the corpus is tokenised left to
right, longest match first; the draft's law after a context depends on the context's last byte
``s`` (so draft and target share the state space, whatever the tokenisation of the context)
and is fitted from the counts of draft token ``v`` following a token that ends in ``s``, with
additive smoothing. The more merges, the less draft mass on the shared single bytes
(:func:`shared_mass`): ``q_d(b"t" | s)`` only counts the ``t`` not absorbed into ``b"th"``.

Examples
--------
>>> import numpy as np
>>> from spectheory.laws.vocabularies import merged_token_counts, tli_draft_law, byte_targets
>>> strings, counts = merged_token_counts(np.frombuffer(b"ababac", np.uint8), [b"ab"])
>>> strings[256], int(counts[ord("b"), 256]), int(counts[ord("b"), ord("a")])   # "ab" "ab" "a" "c"
(b'ab', 1, 1)
>>> q = tli_draft_law(np.array([[0.5, 0.25, 0.25]]), [0, -1, 1], 2)   # token 1 is not shared
>>> q.tolist()
[[0.6666666666666666, 0.3333333333333333]]
>>> byte_targets([b"a", b"ab"]).tolist()
[97, -1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int

__all__ = [
    "byte_targets",
    "top_byte_pairs",
    "merged_tokenize",
    "merged_token_counts",
    "merged_token_draft",
    "tli_draft_law",
    "shared_mass",
]

_BYTES = 256


def _check_merges(merges: Sequence[bytes]) -> list[bytes]:
    out = [bytes(m) for m in merges]
    if any(len(m) < 2 for m in out):
        raise ValueError("merges: every merged token must be a byte string of length >= 2")
    if len(set(out)) != len(out):
        raise ValueError("merges: duplicate merged tokens")
    return out


def byte_targets(strings: Sequence[bytes]) -> np.ndarray:
    """The target (byte) id of each draft token, ``-1`` for a merged token (not in ``V_t``).

    Examples
    --------
    >>> from spectheory.laws.vocabularies import byte_targets
    >>> byte_targets([b"\\n", b"th", b"e"]).tolist()
    [10, -1, 101]
    """
    return np.array([s[0] if len(s) == 1 else -1 for s in strings], dtype=np.int64)


def top_byte_pairs(data: ArrayLike, k: int) -> list[bytes]:
    """The ``k`` most frequent adjacent byte pairs of ``data`` (ties: the smaller pair first).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.vocabularies import top_byte_pairs
    >>> top_byte_pairs(np.frombuffer(b"abababc", np.uint8), 2)
    [b'ab', b'ba']
    """
    d = np.asarray(data, dtype=np.uint8).astype(np.int64)
    k = check_int(k, "k", 0)
    if d.size < 2 or k == 0:
        return []
    counts = np.bincount(d[:-1] * _BYTES + d[1:], minlength=_BYTES * _BYTES)
    order = np.lexsort((np.arange(counts.size), -counts))[:k]
    return [bytes([int(c) // _BYTES, int(c) % _BYTES]) for c in order if counts[c] > 0]


def merged_tokenize(data: ArrayLike, merges: Sequence[bytes]) -> np.ndarray:
    """Draft token ids of ``data``: left to right, the longest merged token that matches, else the byte.

    Ids ``0..255`` are the bytes, ``256 + i`` is ``merges[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.vocabularies import merged_tokenize
    >>> merged_tokenize(np.frombuffer(b"abcab", np.uint8), [b"ab", b"abc"]).tolist()
    [257, 256]
    """
    raw = bytes(np.asarray(data, dtype=np.uint8))
    ms = _check_merges(merges)
    ids = {m: _BYTES + i for i, m in enumerate(ms)}
    lengths = sorted({len(m) for m in ms}, reverse=True)
    out, i, n = [], 0, len(raw)
    while i < n:
        for L in lengths:
            tok = ids.get(raw[i : i + L]) if i + L <= n else None
            if tok is not None:
                out.append(tok)
                i += L
                break
        else:
            out.append(raw[i])
            i += 1
    return np.array(out, dtype=np.int64)


def merged_token_counts(
    data: ArrayLike, merges: Sequence[bytes], pad_byte: int = 10
) -> tuple[list[bytes], np.ndarray]:
    """The draft vocabulary's strings and the counts ``c(s, v)`` of draft token ``v`` after last byte ``s``.

    Returns ``(strings, counts)``: ``strings[v]`` (the 256 bytes, then ``merges``) and an int
    array ``[256, 256 + len(merges)]``; the first token's context is ``pad_byte``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.vocabularies import merged_token_counts
    >>> strings, c = merged_token_counts(np.frombuffer(b"thth", np.uint8), [b"th"])
    >>> int(c[10, 256]), int(c[ord("h"), 256]), int(c.sum())
    (1, 1, 2)
    """
    ms = _check_merges(merges)
    strings = [bytes([b]) for b in range(_BYTES)] + ms
    toks = merged_tokenize(data, ms)
    last = np.array([s[-1] for s in strings], dtype=np.int64)
    pad = check_int(pad_byte, "pad_byte", 0)
    if pad >= _BYTES:
        raise ValueError(f"pad_byte: expected a byte (0..255), got {pad}")
    prev = np.concatenate([[pad], last[toks[:-1]]]).astype(np.int64) if toks.size else toks
    V = len(strings)
    counts = np.bincount(prev * V + toks, minlength=_BYTES * V).reshape(_BYTES, V)
    return strings, counts


def merged_token_draft(
    data: ArrayLike, merges: Sequence[bytes], alpha: float = 0.1, pad_byte: int = 10
) -> tuple[list[bytes], np.ndarray]:
    r"""A merged-token draft fitted from ``data``: ``(strings, q_d [256, V_d])``.

    ``q_d(v | s) = (c(s, v) + alpha) / (sum_w c(s, w) + V_d alpha)`` with the counts of
    :func:`merged_token_counts`.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.vocabularies import merged_token_draft
    >>> strings, q = merged_token_draft(np.frombuffer(b"the then", np.uint8), [b"th"], alpha=1.0)
    >>> q.shape, bool(np.allclose(q.sum(1), 1))
    ((256, 257), True)
    """
    if not alpha > 0:
        raise ValueError(f"alpha: expected > 0, got {alpha!r}")
    strings, counts = merged_token_counts(data, merges, pad_byte)
    w = counts + float(alpha)
    return strings, w / w.sum(1, keepdims=True)


def _to_target(to_target: ArrayLike, V_d: int, target_vocab_size: int) -> np.ndarray:
    m = np.asarray(to_target, dtype=np.int64)
    if m.shape != (V_d,):
        raise ValueError(f"to_target: expected shape ({V_d},), got {m.shape}")
    shared = m[m >= 0]
    if np.any(m < -1) or np.any(shared >= target_vocab_size) or len(set(shared.tolist())) != shared.size:
        raise ValueError("to_target: expected distinct target ids in [0, target_vocab_size) or -1")
    return m


def shared_mass(draft_laws: ArrayLike, to_target: ArrayLike) -> np.ndarray:
    """``q_d(I | s)``: the draft's mass on the tokens shared with the target, per row ``[...]``.

    Examples
    --------
    >>> from spectheory.laws.vocabularies import shared_mass
    >>> shared_mass([[0.5, 0.25, 0.25]], [0, -1, 1]).tolist()
    [0.75]
    """
    d = np.asarray(draft_laws)
    m = np.asarray(to_target, dtype=np.int64)
    return (d * (m >= 0)).sum(-1)


def tli_draft_law(draft_laws: ArrayLike, to_target: ArrayLike, target_vocab_size: int) -> np.ndarray:
    r"""TLI's drafting law over the target vocabulary: ``q_d`` restricted to the shared tokens, renormalised.

    Parameters
    ----------
    draft_laws : array [..., V_d]
        The draft's laws over its own vocabulary (floats, or Fractions in an object array).
    to_target : int array [V_d]
        The target id of each draft token, ``-1`` when the token is not in the target
        vocabulary (distinct ids).
    target_vocab_size : int

    Returns
    -------
    ndarray [..., V_t]
        ``q_I(x) = q_d(v_x) / q_d(I)`` for the draft token ``v_x`` with target id ``x``, 0 for
        target tokens the draft does not have. Raises ``ValueError`` where ``q_d(I) = 0`` (TLI
        has nothing to draft there).
    """
    d = np.asarray(draft_laws)
    Vt = check_int(target_vocab_size, "target_vocab_size", 1)
    m = _to_target(to_target, d.shape[-1], Vt)
    mass = np.asarray(shared_mass(d, m))  # 0-d for one row (a Fraction stays an object)
    if np.any(mass == 0):
        raise ValueError("draft_laws: a row puts no mass on the shared tokens (TLI cannot draft there)")
    out = np.zeros((*d.shape[:-1], Vt), dtype=d.dtype)
    keep = m >= 0
    out[..., m[keep]] = d[..., keep]
    return out / mass[..., None]
