"""Along-path prediction drives any round through Round.along_path (the visitor), never its class."""

import numpy as np
import pytest

from spectheory.cost import LinearForward
from spectheory.kinds import PathRound
from spectheory.rounds import Round
from spectheory.rounds.base import UnsupportedRoundError
from spectheory.stopping import ConfidenceThreshold, PolicyRound
from spectheory.trees import BatchRound, DraftTree, TreeRound
from spectheory.tuning.along_path import AlongPath, PathRounds, round_model
from spectheory.tuning.cost_predict import PathSample, predict_time
from spectheory.tuning.cost_timing import DecoderTiming, RoundOverhead
from spectheory.tuning.tune_runs import config_label

T, L0 = 10, 4
REJECT = np.random.default_rng(3).uniform(0, 0.6, (6, T))


def _sample():
    return PathSample(L0, T, np.zeros((6, L0 + T), np.int64), REJECT.copy(), prompt_of=np.arange(6) % 2)


def _timing():
    return DecoderTiming(
        LinearForward(1e-3, 1e-5, 1e-7),
        LinearForward(1e-4, 1e-6, 0.0),
        {"path": RoundOverhead(1e-5, 2e-6, 3e-7), "mine": RoundOverhead(4e-5)},
        step={"path": 3e-6},
    )


class EveryOther(Round):
    """A user's round kind in this file: drafts ``2 * half`` tokens along one path.

    It subclasses only :class:`Round` and picks the path entry of the along-path visitor."""

    def __init__(self, half):
        self.half = half

    @property
    def name(self):
        return f"every_other(half={self.half})"

    def along_path(self, predictor):
        return predictor.path(2 * self.half)

    @property
    def max_depth(self):
        return 2 * self.half


class Priced(PathRounds):
    """A user's own along-path model: a path priced under its own overhead entry."""

    kind, keys = "mine", ("mine",)


class OwnModel(PathRound):
    def along_path(self, predictor):
        assert isinstance(predictor, AlongPath)
        return Priced(self.gamma)


class NoPrediction(Round):
    @property
    def name(self):
        return "no_prediction()"


def test_a_user_round_kind_is_predicted_through_the_visitor():
    sample, timing = _sample(), _timing()
    mine = predict_time(sample, EveryOther(2), timing, 2, rng=0)
    same = predict_time(_sample(), PathRound(4), timing, 2, rng=0)
    assert mine == same  # identical to the package's path round of 4
    assert config_label(EveryOther(2)) == "gamma=4" and round_model(EveryOther(2)).kind == "path"
    assert timing.round_seconds(EveryOther(2), 3, 4, 20.0) == timing.round_seconds(PathRound(4), 3, 4, 20.0)


def test_a_user_model_is_priced_under_its_own_keys():
    timing = _timing()
    own, path = timing.round_seconds(OwnModel(3), 1, 3, 10.0), timing.round_seconds(PathRound(3), 1, 3, 10.0)
    # no step entry for "mine"; its overhead 4e-5 instead of the path's 1e-5 + 2e-6 * 4 + 3e-7 * 4
    assert own - path == pytest.approx(4e-5 - (1e-5 + 8e-6 + 1.2e-6) - 3 * 3e-6, rel=1e-9)
    assert predict_time(_sample(), OwnModel(3), timing, 1)["tokens_per_call"] == pytest.approx(
        predict_time(_sample(), PathRound(3), timing, 1)["tokens_per_call"]
    )


def test_a_round_without_along_path_is_refused_by_name():
    with pytest.raises(UnsupportedRoundError, match=r"no_prediction\(\).*does not define along_path"):
        predict_time(_sample(), NoPrediction(), _timing(), 1)
    with pytest.raises(UnsupportedRoundError, match="no_prediction"):
        _timing().round_seconds(NoPrediction(), 1, 2, 0.0)
    with pytest.raises(UnsupportedRoundError, match="no_prediction"):
        config_label(NoPrediction())


def test_rounds_whose_rule_the_kernels_do_not_describe_are_refused():
    """The path kernel is token verification, the tree kernel recursive rejection node by node."""
    assert round_model(BatchRound(2, 3)).label == "tree 2x1x1"  # the first-token reading: tree_rrs
    refused = (
        (BatchRound(2), "drawn per horizon"),
        (BatchRound(2, 3, "gls"), "not 'gls'"),
        (TreeRound(DraftTree.from_branching([2]), "traversal"), "not 'traversal'"),
        (PathRound(3, "block"), "token verification, not 'block'"),
    )
    for rnd, why in refused:
        with pytest.raises(UnsupportedRoundError, match=why):
            round_model(rnd)
    assert round_model(TreeRound(DraftTree.from_branching([2]), "tree_rrs_wo")).kind == "tree"


@pytest.mark.parametrize(
    "rnd, label, kind, calls, scored",
    [
        (PathRound(3), "gamma=3", "path", ((2, 1), (1, 2)), 4),
        (PolicyRound(ConfidenceThreshold(0.4, max_depth=5)), None, "policy", ((2, 1), (1, 2)), 4),
        (
            TreeRound(DraftTree.from_branching([2, 2, 1])),
            "tree 2x2x1",
            "tree",
            ((2, 1), (2, 1), (4, 1)),
            11.0,
        ),
        (TreeRound(DraftTree.from_branching([2, 1])), "tree 2x1", "tree", ((2, 1), (2, 1), (2, 1)), 5.0),
    ],
)
def test_each_kind_answers_the_shape_of_its_rounds(rnd, label, kind, calls, scored):
    m = round_model(rnd)
    assert m.kind == kind and m.draft_calls(3) == calls and m.scored(3) == scored
    assert label is None or m.label == label
