"""Exact calibration tables (ECE, AUROC) vs Monte Carlo draws of blocks and acceptances."""

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory.schedules import auroc, confidence_table, ece
from spectheory.schedules.confidence import PROXIES, _score
from spectheory.schedules.named_batches import random_batches


def _draws(rows, gamma, feature, n, rng):
    """(score, accepted) of every reached slot of n blocks per row, by drawing them, and the
    number of reached slots of each batch (one block per row)."""
    out = []
    reached = np.zeros(n)
    for row in rows:
        for t in range(n):
            pre = ()
            for _ in range(gamma):
                p, q = (np.array(v, dtype=float) for v in row.laws(pre))
                s = float(_score(row.laws(pre)[0], row.laws(pre)[1], feature))
                x = int(rng.choice(len(q), p=q / q.sum()))
                ok = rng.random() < min(1.0, p[x] / q[x])
                out.append((s, ok))
                reached[t] += 1
                if not ok:
                    break
                pre = pre + (x,)
    return out, reached


def _hanley_mcneil(a, n1, n2):
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    return np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2))


def test_exact_acceptance_is_calibrated_exactly():
    for _, rows, gamma, _ in random_batches(3, 2, 3, V=3, seed=1):
        assert ece(confidence_table(rows, gamma, "conf")) == 0
        assert ece(confidence_table(rows, gamma, "conf"), bins=10) == 0


@pytest.mark.parametrize("feature", PROXIES)
def test_tables_vs_monte_carlo_within_5_se(feature):
    _, rows, gamma, _ = random_batches(1, 2, 2, V=3, seed=3)[0]
    table = confidence_table([r.as_float() for r in rows], gamma, feature)
    n = 3000
    draws, reached = _draws(rows, gamma, feature, n, np.random.default_rng(0))
    # reached slots per batch, and the acceptance rate of each score group
    mass = sum(m for m, _, _ in table)
    assert abs(reached.mean() - mass) < 5 * reached.std(ddof=1) / np.sqrt(n)
    groups = {}
    for m, s, pa in table:
        g = groups.setdefault(round(float(s), 12), [0.0, 0.0])
        g[0], g[1] = g[0] + m, g[1] + m * pa
    for s, (m, acc) in groups.items():
        hits = [ok for sc, ok in draws if round(sc, 12) == s]
        if len(hits) < 50:
            continue
        p = acc / m
        assert abs(np.mean(hits) - p) < 5 * np.sqrt(p * (1 - p) / len(hits)) + 1e-9, (s, p)
    a = float(auroc(table))
    mc_table = [(1, s, float(ok)) for s, ok in draws]
    n1 = sum(ok for _, ok in draws)
    assert abs(float(auroc(mc_table)) - a) < 5 * _hanley_mcneil(a, n1, len(draws) - n1)


def test_chained_survival_is_not_calibrated():
    _, rows, gamma, _ = random_batches(1, 2, 3, V=3, seed=6)[0]
    assert ece(confidence_table(rows, gamma, "conf", event="survival")) > 0


def test_auroc_of_a_perfect_and_a_constant_score():
    assert auroc([(1, F(1), 1), (1, F(0), 0)]) == 1
    assert auroc([(1, F(1, 2), F(1, 3)), (1, F(1, 2), F(2, 3))]) == F(1, 2)
    with pytest.raises(ValueError, match="feature"):
        confidence_table(random_batches(1, 1, 1)[0][1], 1, "nope")


@pytest.mark.parametrize("feature", ["conf", "max_prob", "margin"])
def test_chained_scores_against_prefix_survival_vs_monte_carlo(feature):
    """event='survival': draw a whole block and its acceptances, keep one uniformly chosen
    (row, slot) per draw (independent samples of the table's mixture), and compare each
    score group's survival rate and the AUROC within 5 SE."""
    _, rows, gamma, _ = random_batches(1, 2, 2, V=3, seed=8)[0]
    table = confidence_table(rows, gamma, feature, event="survival")
    assert sum(m for m, _, _ in table) == len(rows) * gamma
    rng = np.random.default_rng(1)
    n = 6000
    draws = []
    for _ in range(n):
        row, depth = rows[rng.integers(len(rows))], int(rng.integers(gamma))
        pre, score, alive = (), 1.0, True
        for _ in range(depth + 1):
            p, q = row.laws(pre)
            score *= float(_score(p, q, feature))
            pf, qf = np.array(p, dtype=float), np.array(q, dtype=float)
            x = int(rng.choice(len(qf), p=qf / qf.sum()))
            alive = alive and rng.random() < min(1.0, pf[x] / qf[x])
            pre = pre + (x,)
        draws.append((round(score, 12), alive))
    groups = {}
    for m, s, pa in table:
        g = groups.setdefault(round(float(s), 12), [0.0, 0.0])
        g[0], g[1] = g[0] + float(m), g[1] + float(m * pa)
    for s, (m, ok) in groups.items():
        hits = [a for sc, a in draws if sc == s]
        if len(hits) >= 50:
            p = ok / m
            assert abs(np.mean(hits) - p) < 5 * np.sqrt(p * (1 - p) / len(hits)) + 1e-9, (s, p)
    a = float(auroc(table))
    n1 = sum(a_ for _, a_ in draws)
    mc = float(auroc([(1, s, float(ok)) for s, ok in draws]))
    assert abs(mc - a) < 5 * _hanley_mcneil(a, n1, n - n1)
