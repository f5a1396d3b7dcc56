"""The last-token Markov abstraction on sparse rows (spectheory.abstraction.sparse_markov).

On small first-order chains made torch models (``chain_models``), with ``top_k = V`` (nothing
dropped) the sparse fit is the dense fit of :func:`fit_abstraction` with the same states (rows
to 1e-6: float32 logits) and its exact protocol the dense chain's; truncated, its tails bound the
TV between the stored and the untruncated rows (equal for one law per state), and the truncation bound's intervals
hold the untruncated chain's exact values.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("spectheory.chain.sparse_chain")

import spectheory as st  # noqa: E402
from spectheory.abstraction.fitting import fit_abstraction  # noqa: E402
from spectheory.abstraction.sparse_markov import fit_last_token_chain  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402
from spectheory.validation import path_statistics, sample_paths  # noqa: E402

V, T = 9, 10


@pytest.fixture(scope="module")
def fitted():
    target, draft = chain_models(st.DecodingChain.random(V, rng=5, concentration=0.5))
    prompts = np.array([[1, 4], [2, 0], [3, 3]])
    paths = sample_paths(target, prompts[np.arange(24) % 3], T, seed=2)
    return target, draft, paths


def _dense(target, draft, paths, chain):
    stats = path_statistics(target, draft, paths, 2, keep_laws=True)
    S = chain.n_states
    state_of = np.asarray(chain.next_state[0])
    states = state_of[paths[:, 1 : 1 + T]]
    ns = np.broadcast_to(state_of, (S, V))
    return fit_abstraction(states, ns, state_of[paths[:, 1]], stats.target_laws, stats.draft_laws)


def test_untruncated_sparse_fit_is_the_dense_fit(fitted):
    target, draft, paths = fitted
    chain = fit_last_token_chain(target, draft, paths, 2, top_k=V, batch_size=5)
    assert chain.n_states == np.unique(paths[:, 1 : 1 + T]).size + 1
    np.testing.assert_allclose(chain.target_tail, 0.0, atol=1e-6)
    dense = _dense(target, draft, paths, chain)
    np.testing.assert_allclose(chain.target.toarray(), dense.target, atol=1e-6)
    np.testing.assert_allclose(chain.draft.toarray(), dense.draft, atol=1e-6)
    np.testing.assert_allclose(chain.initial, dense.initial, atol=1e-12)
    for gamma in (1, 3):
        a, b = chain.protocol(T, gamma), dense.protocol(T, gamma)
        assert a.target_calls == pytest.approx(b.target_calls, rel=1e-5)
        assert a.rejections == pytest.approx(b.rejections, rel=1e-5, abs=1e-8)


def test_truncated_tails_are_the_tv_and_the_bound_holds(fitted):
    target, draft, paths = fitted
    full = fit_last_token_chain(target, draft, paths, 2, top_k=V)
    cut = fit_last_token_chain(target, draft, paths, 2, top_k=3)
    assert cut.target.getnnz(1).max() <= 3 * len(paths) * T and (cut.target_tail > 0).any()
    tv = 0.5 * np.abs(cut.target.toarray() - full.target.toarray()).sum(1)
    # one law per last-token state (the models are first-order chains): the TV is the tail; the
    # back-off state averages several laws: at most the tail
    np.testing.assert_allclose(tv[:-1], cut.target_tail[:-1], atol=1e-6)
    assert tv[-1] <= cut.target_tail[-1] + 1e-9
    bound = cut.truncation_bound(T, 2)
    lo, hi = bound.interval("target_calls")
    assert lo - 1e-9 <= full.protocol(T, 2).target_calls <= hi + 1e-9
