r"""Result 4: Theorem 1 of Yin et al. (2024) on a symbolic chain, by enumerating the protocol.

Statement
---------
Generate T tokens over a vocabulary of V = 2 with speculative decoding *without bonus
tokens* (every position is produced by a draft check: accepted draft token or residual
token), draft length gamma. Let the target and the draft be arbitrary (symbolic)
next-token kernels :math:`p_n(\cdot \mid x_{<n})`, :math:`q_n(\cdot \mid x_{<n})`, one
free parameter per prefix each (a prefix tree: the most general chain of horizon T). Then

.. math:: E[\#\text{rejections}] = \sum_{n=1}^{T} E_{x_{<n} \sim p}\big[\mathrm{TV}(p_n(\cdot\mid x_{<n}),\,
          q_n(\cdot\mid x_{<n}))\big],

for every gamma, and the generated sequence has exactly the target's joint law.

Proof (mechanical)
------------------
:func:`protocol_leaves` enumerates every branch of the protocol symbolically: at a round
start with n tokens, the draft proposes :math:`k = \min(\gamma, T - n)` tokens (all
:math:`V^k` draft sequences, each with its draft probability), the checks run left to right
(accept with :math:`\min(1, p/q)`), the first rejection emits a residual token
(:math:`\max(p - q, 0)/Z`, each of the V outcomes) and ends the round; if all k are accepted
the round ends with no bonus token. Each leaf carries its probability, emitted sequence and
rejection count. The expected rejections and the sequence law are sums over leaves. They
are compared with the Theorem 1 sum and the target's joint law after resolving every
min/max/|.| on every sign pattern of :math:`p_n - q_n` (one comparison per prefix; on V = 2
the second token's difference is minus the first), with the second probability of each law
written as 1 - the first. Rejection branches carry the factor
:math:`\rho\,\max(p - q, 0)/Z` with :math:`\rho = Z` (result 1), so every leaf weight is a
polynomial after cancelling Z, and at Z = 0 both the protocol's weight and the polynomial
are 0. Checked for T = 2 with gamma = 1, 2 (gamma >= 2 is gamma = 2 at T = 2). The
enumeration code is generic in T and V, but T = 3 (128 sign patterns, larger leaves) takes
sympy several minutes, so it is not part of :func:`check`.
"""

from __future__ import annotations

import itertools

import sympy as sp

from ._sym import assert_equal, resolve, sign_patterns

TITLE = "Theorem 1 (Yin et al.): E[rejections] = sum E[TV] on a symbolic two-step chain"


def symbolic_prefix_tree(horizon: int, vocab: int = 2):
    """Symbolic kernels of a prefix tree: ``{prefix: law}`` for target and draft.

    Each law is a tuple of ``vocab`` positive symbols; ``simplex`` maps each law's last symbol
    to 1 - (sum of the others)."""
    target, draft, simplex = {}, {}, {}
    for n in range(horizon):
        for prefix in itertools.product(range(vocab), repeat=n):
            tag = "".join(map(str, prefix)) or "e"
            for table, name in ((target, "p"), (draft, "q")):
                law = sp.symbols(f"{name}{tag}_0:{vocab}", positive=True)
                table[prefix] = law
                simplex[law[-1]] = 1 - sum(law[:-1])
    return target, draft, simplex


def protocol_leaves(target, draft, horizon: int, gamma: int, vocab: int = 2):
    """All branches of speculative decoding without bonus tokens: ``(prob, tokens, rejections)``."""

    def residual(prefix):
        t, d = target[prefix], draft[prefix]
        excess = [sp.Max(a - b, 0) for a, b in zip(t, d)]
        mass = sum(excess)
        return [e / mass for e in excess]

    def rounds(prefix, prob, rej):
        n = len(prefix)
        if n == horizon:
            yield prob, prefix, rej
            return
        k = min(gamma, horizon - n)
        # the draft proposes k tokens autoregressively: every sequence with its probability
        for xs in itertools.product(range(vocab), repeat=k):
            p_draft, cur = sp.Integer(1), prefix
            for x in xs:
                p_draft *= draft[cur][x]
                cur = cur + (x,)
            # checks left to right
            cur, p_acc = prefix, sp.Integer(1)
            for x in xs:
                t, d = target[cur], draft[cur]
                accept = sp.Min(1, t[x] / d[x])
                for y, r in enumerate(residual(cur)):
                    yield from rounds(cur + (y,), prob * p_draft * p_acc * (1 - accept) * r, rej + 1)
                p_acc *= accept
                cur = cur + (x,)
            yield from rounds(cur, prob * p_draft * p_acc, rej)  # all accepted, no bonus

    yield from rounds((), sp.Integer(1), 0)


def theorem1_sum(target, draft, horizon: int, vocab: int = 2):
    """:math:`\\sum_n E_{x_{<n} \\sim p}[\\mathrm{TV}(p_n, q_n)]` with |.| unresolved."""
    total = 0
    for n in range(horizon):
        for prefix in itertools.product(range(vocab), repeat=n):
            weight = sp.Mul(*[target[prefix[:j]][prefix[j]] for j in range(n)])
            tv = sum(sp.Abs(a - b) for a, b in zip(target[prefix], draft[prefix])) / 2
            total += weight * tv
    return total


def _check(horizon: int, gammas) -> None:
    vocab = 2
    target, draft, simplex = symbolic_prefix_tree(horizon, vocab)
    keys = [target[pre][0] - draft[pre][0] for pre in target]
    bound = theorem1_sum(target, draft, horizon, vocab)
    joint = {
        seq: sp.Mul(*[target[seq[:j]][seq[j]] for j in range(horizon)])
        for seq in itertools.product(range(vocab), repeat=horizon)
    }
    for gamma in gammas:
        leaves = list(protocol_leaves(target, draft, horizon, gamma, vocab))
        rejections = sum(prob * rej for prob, _seq, rej in leaves)
        law = {seq: 0 for seq in joint}
        for prob, seq, _rej in leaves:
            law[seq] += prob
        for signs in sign_patterns(keys):

            def closed(e, signs=signs):
                return sp.sympify(resolve(e, signs, simplex)).subs(simplex)

            pattern = list(signs.values())
            assert_equal(
                closed(rejections),
                closed(bound),
                f"T={horizon}, gamma={gamma}: E[rejections] = sum E[TV] on {pattern}",
            )
            for seq, prob in law.items():
                assert_equal(
                    closed(prob),
                    closed(joint[seq]),
                    f"T={horizon}, gamma={gamma}: P(sequence {seq}) = target law on {pattern}",
                )


def check() -> None:
    """Prove result 4 for T = 2 and every gamma (raises AssertionError on failure)."""
    _check(2, (1, 2))


if __name__ == "__main__":
    check()
    print(f"PASS  {TITLE}")
