"""OpCount: the torch operations dispatched outside the models' forwards (issue 22)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spectheory.cost import OpCount  # noqa: E402


def test_counts_outside_and_inside_and_restores_the_forward():
    lin, x = torch.nn.Linear(3, 2), torch.ones(1, 3)
    with OpCount(lin) as ops:
        y = lin(x)
        z = y * 2 + 1
    assert dict(ops.outside) == {"aten.mul.Tensor": 1, "aten.add.Tensor": 1}
    assert ops.total_outside == 2 and ops.inside >= 1
    assert "forward" not in lin.__dict__  # the class's forward again
    with OpCount() as none:  # no model: everything is outside
        _ = z + 1
    assert none.total_outside == 1 and none.inside == 0


def test_rejects_non_modules():
    with pytest.raises(ValueError, match="torch modules"):
        OpCount(3)


def test_a_round_at_batch_one_stays_a_short_list_of_operations():
    """The round's overhead on a CPU is about its count of small operations (docs/decoder_floor.md
    section 3): 187 per round at gamma 3 before the aligned-round work, 122 after. A change that
    adds operations to every round fails here, whatever the machine's load."""
    from spectheory.decoder import load_model
    from spectheory.decoder.corpus import heldout_windows
    from spectheory.decoder.speculative import speculative_generate

    target, draft = load_model("target"), load_model("draft-tiny")
    prompts = heldout_windows(1, 32)
    per_round = {}
    for gamma in (1, 3):
        with OpCount(target, draft) as ops:
            st = speculative_generate(target, draft, prompts, 64, gamma, seed=0).stats
        per_round[gamma] = ops.total_outside / st.batch_target_calls
    assert per_round[3] <= 130, per_round
    # each drafted token adds its law, its draw and its feed: eight operations
    assert per_round[3] - per_round[1] <= 2 * 10, per_round
