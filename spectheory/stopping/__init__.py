r"""How long to draft: draft-length policies, their exact evaluation, the optimum and Monte Carlo.

After each drafted token a policy decides whether to draft another (:mod:`.policies`): a
fixed gamma (Leviathan et al.), SpecDec++'s threshold on the probability that some drafted
token is rejected, HuggingFace's confidence threshold and +2/-1 schedule, an entropy rule.
:func:`evaluate_policy` computes a policy's expected target calls, draft steps and time
exactly on a :class:`~spectheory.DecodingChain`; :func:`optimal_policy` the best policy
with state or full (path) information; :func:`long_run_optimum` the best long-run rate;
:class:`PolicyRound` checks all of it by Monte Carlo (``st.simulate(chain, T, policy, cost=...)``);
:func:`policy_round_dp` predicts a runnable rule along output paths, exactly given each path (the
Rao-Blackwellised prediction for the real decoder); :func:`lockstep_rate` and
:func:`optimal_policy_by_batch` cost a policy on a batch of rows in lockstep (``docs/cost.md``).
Derivations: ``docs/stopping.md``.

>>> import spectheory as st
>>> from spectheory import stopping
>>> chain = st.DecodingChain.random(3, concentration=0.5, rng=0)
>>> opt = stopping.optimal_policy(chain, 16, 0.1, max_depth=6)
>>> fix = stopping.evaluate_policy(chain, stopping.FixedGamma(3), 16, 0.1)
>>> bool(opt.time() <= fix.time())
True
"""

from ..kinds.policy.evaluate import PolicyValue, evaluate_policy
from ..kinds.policy.policies import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    Policy,
    RejectionThreshold,
    StartStatePolicy,
    StopContext,
    leviathan_policy,
)
from ..kinds.policy.round import PolicyRound
from .adaptive_steps import EMASteps
from .controllers import AcceptanceRateK, ROCThreshold, UCBGamma
from .gap import oracle_gap
from .hedge import HedgeGamma
from .lockstep import optimal_policy_by_batch
from .longrun import long_run_policy
from .optimal import compare_policies, long_run_optimum, optimal_policy
from .oracle import long_run_oracle, oracle_value

__all__ = [
    "Policy",
    "StopContext",
    "FixedGamma",
    "ConfidenceThreshold",
    "EntropyRule",
    "RejectionThreshold",
    "HFSchedule",
    "StartStatePolicy",
    "leviathan_policy",
    "PolicyValue",
    "evaluate_policy",
    "optimal_policy",
    "compare_policies",
    "long_run_optimum",
    "PolicyRound",
    "optimal_policy_by_batch",
    "oracle_value",
    "long_run_oracle",
    "long_run_policy",
    "oracle_gap",
    "ROCThreshold",
    "AcceptanceRateK",
    "UCBGamma",
    "HedgeGamma",
    "EMASteps",
]
