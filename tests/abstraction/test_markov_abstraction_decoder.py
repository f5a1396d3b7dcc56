"""Certified Markov abstractions on shipped models (issue 16), at small sizes.

``draft-small`` plays the target and ``draft-ngram`` the draft (fast on CPU). Deterministic
properties only (no tolerances beyond float rounding): along the same target paths, the
plug-in bound never exceeds the Rao-Blackwellised estimate, it grows with the order and along
a grown context tree, and context-tree states follow the tree's transitions.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory.abstraction as A  # noqa: E402
import spectheory.abstraction.hidden_states  # noqa: E402,F401  (A.hidden_states below: a submodule, not a lazy name)
import spectheory.validation as V  # noqa: E402
from spectheory.decoder import list_models, load_model  # noqa: E402
from spectheory.decoder.corpus import heldout_windows  # noqa: E402

pytestmark = pytest.mark.skipif(
    not {"draft-small", "draft-ngram"} <= set(list_models()), reason="shipped draft models not present"
)


@pytest.fixture(scope="module")
def paths_and_laws():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    target, draft = load_model("draft-small"), load_model("draft-ngram")
    L, T = 8, 10
    pr = V.repeat_prompts(heldout_windows(4, L), 40)
    tp = V.sample_paths(target, pr, T, seed=5)
    tl, hidden = A.hidden_states.path_laws(target, tp, L, hidden=True)
    dl = A.hidden_states.path_laws(draft, tp, L)
    torch.set_num_threads(old)
    return tp, tl, dl, hidden, L, T


def test_plugin_bounds_are_below_rao_blackwell_and_grow_with_order(paths_and_laws):
    tp, tl, dl, _, L, T = paths_and_laws
    rb = (0.5 * np.abs(tl.astype(float) - dl).sum(-1)).sum(1).mean()
    prev_pool, prev_pos, chains = -1.0, -1.0, []
    for k in range(4):
        tree = A.ContextTree.order_k(tp, L, k)
        s = tree.assign(tp, L)
        np.testing.assert_array_equal(s[:, 1:], tree.next_state[s[:, :-1], tp[:, L:-1]])
        pool = A.plugin_bound(s, tl, dl, tree.n_states, per_position=False)
        pos = A.plugin_bound(s, tl, dl, tree.n_states, per_position=True)
        assert prev_pool - 1e-9 <= pool <= pos + 1e-9 and pos <= rb + 1e-9 and pos >= prev_pos - 1e-9
        prev_pool, prev_pos = pool, pos
        chains.append(
            A.fit_abstraction(
                s, tree.next_state, s[:, 0], tl, dl, fallback=tree.subtree_kernels(tp, L, tl, dl)
            )
            .tv_profile(T)
            .sum()
        )
    assert chains[0] < chains[2] < rb
    # the order-0 target-path chain is T * TV of the mean laws
    np.testing.assert_allclose(
        chains[0],
        T * 0.5 * np.abs(tl.reshape(-1, 256).mean(0) - dl.reshape(-1, 256).mean(0)).sum(),
        rtol=1e-4,
    )  # float32 laws


def test_grown_tree_and_clusters_on_model_paths(paths_and_laws):
    tp, tl, dl, hidden, L, T = paths_and_laws
    tree, order = A.ContextTree.grow(tp, L, tl, dl, budget=60, max_order=5, min_count=2, return_order=True)
    vals = [
        A.plugin_bound(A.ContextTree(order[:b]).assign(tp, L), tl, dl, b) for b in (1, 10, 30, len(order))
    ]
    assert np.all(np.diff(vals) >= -1e-9)
    a = A.HiddenStateAbstraction(hidden, tp[:, L:], 8, rng=0)
    assert a.states.shape == (len(tp), T) and 0.0 < a.transition_determinism <= 1.0
    chain = A.fit_abstraction(a.states, a.next_state, a.states[:, 0], tl, dl)
    assert 0.0 < chain.tv_profile(T).sum() < T
