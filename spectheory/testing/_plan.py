"""The instances of a kit run: the families' plan or the given instances, and their seeds."""

from __future__ import annotations

from itertools import cycle

import numpy as np

from .instances import ALL_FAMILIES, FAMILIES, Instance, make_instance


def _name(verify: object) -> str:
    return getattr(verify, "__name__", None) or getattr(verify, "name", None) or type(verify).__name__


def _instances(vocab_sizes, gammas, families, instances, seed):
    """The instances of a run (the families' plan, or the given ones, checked) and the seed
    sequence their randomness comes from; shared by :func:`check_verifier` and
    :func:`spectheory.testing.check_sampler`."""
    fams = list(FAMILIES) if families is None else list(families)
    for f in fams:
        if f not in ALL_FAMILIES:
            raise ValueError(f"families: unknown {f!r}; choose from {sorted(ALL_FAMILIES)}")
    if instances is None:
        return _plan(vocab_sizes, gammas, fams, seed)
    insts = list(instances)
    if not insts or not all(isinstance(i, Instance) for i in insts):
        raise ValueError("instances: expected a non-empty sequence of Instance")
    return insts, np.random.SeedSequence(seed)


def _plan(vocab_sizes, gammas, families, seed):
    fams = list(families)
    n_inst = max(len(fams), len(vocab_sizes), len(gammas))
    ss = np.random.SeedSequence(seed)
    rngs = ss.spawn(n_inst + 1)
    plan = []
    vit, git = cycle(vocab_sizes), cycle(gammas)
    fit = cycle(fams)
    for i in range(n_inst):
        fam = next(fit)
        V, g = next(vit), next(git)
        if ALL_FAMILIES[fam][2]:
            g = max(gammas)
        plan.append(make_instance(fam, V, g, rngs[i]))
    return plan, rngs[-1]
