"""Which configuration to run: the real decoder's wall time and throughput predicted along target
paths, and the tuner that ranks gamma, trees and draft-length policies by it (torch to measure).

- along-path prediction of any round (:mod:`.along_path`): a round hands its data to the visitor
  of :func:`round_model` through its ``along_path`` method (each kind's jump kernel:
  :mod:`spectheory.validation.round_kernels`);
- the law of a row's and a batch's number of rounds (:mod:`.cost_rounds`): :func:`rounds_law`,
  :func:`batch_rounds`;
- wall time and throughput at every batch size (:mod:`.cost_predict`, :mod:`.cost_timing`):
  :func:`sample_target_paths`, :func:`predict_time`, :class:`DecoderTiming`,
  :func:`measure_overhead`; the same fitted on the decoder's own logged calls, each run
  predicted from the others (:mod:`.cost_insitu`): :func:`measure_logged`,
  :func:`insitu_timing`, :func:`predict_held_out`;
- which configuration to run (:mod:`.tuner`, its grid and decoder runs in :mod:`.tune_runs`):
  :func:`tune`, :class:`TuneResult`, :func:`default_configs`;
- measured wall-time speedup against Leviathan et al.'s prediction (:mod:`.speed`):
  :func:`measure_speed`.

The derivations are in ``docs/tune.md``. Names load on first use (``spectheory._lazy``).

Examples
--------
The number of rounds of a path never rejected, ``gamma = 2`` over 6 tokens: always 2.

>>> from spectheory.tuning import rounds_law
>>> from spectheory.validation.round_kernels import path_kernel
>>> law, _ = rounds_law(path_kernel([[0.0] * 6], 2))
>>> law[0].tolist()[:4]
[0.0, 0.0, 1.0, 0.0]
"""

from .._lazy import lazy_package

#: public name -> the submodule defining it (the everyday names; the rest are imported from
#: their modules)
_EXPORTS = {
    "round_model": "along_path",
    "AlongPath": "along_path",
    "rounds_law": "cost_rounds",
    "batch_rounds": "cost_rounds",
    "batch_depth_law": "cost_rounds",
    "PathSample": "cost_predict",
    "sample_target_paths": "cost_predict",
    "predict_time": "cost_predict",
    "DecoderTiming": "cost_timing",
    "RoundOverhead": "cost_timing",
    "measure_overhead": "cost_timing",
    "measure_logged": "cost_insitu",
    "insitu_timing": "cost_insitu",
    "predict_held_out": "cost_insitu",
    "default_configs": "tune_runs",
    "config_label": "tune_runs",
    "tune": "tuner",
    "TuneResult": "tuner",
    "measure_speed": "speed",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)
