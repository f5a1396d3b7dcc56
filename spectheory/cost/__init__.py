"""What speculation costs in time: the cost of a round at every batch size (``docs/cost.md``).

* :class:`Cost` -- the cost of a round as the engines read it: a draft step ``c``, a target
  call ``t(k)`` scoring ``k`` drafted tokens, optionally a draft forward per tree level and the
  time per token of plain decoding (:mod:`.base`);
* :class:`ForwardCost` -- seconds of one forward ``f(batch, tokens, context)``:
  :class:`ConstantForward`, :class:`LinearForward`, :class:`TabulatedForward` (the measured
  curve), :class:`RooflineForward` (:mod:`.forward`);
* :class:`CostModel` -- a target and a draft forward and an overhead; ``model.at(batch,
  context)`` is the :class:`Cost` of a round in seconds; :class:`ConstantCost` is Leviathan et
  al.'s constant ``c`` (:mod:`.round_cost`);
* :func:`named_cost` -- example models with published constants (:mod:`.examples`);
* :func:`optimal_gamma`, :func:`optimal_round`, :func:`speedup_table`, :func:`crossover_batch`
  -- the best configuration per batch size, the crossover and the constant-``c`` error
  (:mod:`.batch`; the best policy per batch size is :mod:`spectheory.stopping.lockstep`);
* :func:`fit_cost` -- time a model's forward on the user's device and fit a form, with the
  fit error (:class:`CostFit`, :mod:`.fit_forward`; torch is imported only when it runs);
* :class:`ForwardLog` -- log the shape and seconds of every forward a model makes while the
  decoder runs (torch hooks; :mod:`.timed`);
* :class:`OpCount` -- count the torch operations the decoder dispatches outside the models'
  forwards, the load-independent measure of a round's overhead on a CPU (:mod:`.op_count`).

This room sits below :mod:`spectheory.exact` (every result type reads a :class:`Cost`), so it
imports only numpy and :mod:`spectheory.laws`.

>>> from spectheory.cost import CostModel, LinearForward, ConstantForward
>>> model = CostModel(LinearForward(0.02, 1e-4), ConstantForward(0.002))
>>> round(model.at(batch=16).target_call(4), 4)
0.028
"""

from .base import Cost, as_cost
from .batch import BatchOptimum, crossover_batch, optimal_gamma, optimal_round, speedup_table
from .examples import COST_MODELS, named_cost
from .fit_forward import CostFit, fit_cost
from .forward import ConstantForward, ForwardCost, LinearForward, RooflineForward, TabulatedForward
from .op_count import OpCount
from .round_cost import ConstantCost, CostModel, DraftCall, TargetCall
from .timed import ForwardLog

__all__ = [
    "Cost",
    "as_cost",
    "ForwardCost",
    "ConstantForward",
    "LinearForward",
    "RooflineForward",
    "TabulatedForward",
    "CostModel",
    "ConstantCost",
    "TargetCall",
    "DraftCall",
    "COST_MODELS",
    "named_cost",
    "BatchOptimum",
    "optimal_gamma",
    "optimal_round",
    "speedup_table",
    "crossover_batch",
    "CostFit",
    "fit_cost",
    "ForwardLog",
    "OpCount",
]
