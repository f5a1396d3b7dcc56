"""The instances of a kit run: the families' plan or the given instances, and their seed sequence."""

from __future__ import annotations

from itertools import cycle

import numpy as np

from .._guards import as_rng
from .._typing import RNGLike
from .instances import ALL_FAMILIES, FAMILIES, Instance, make_instance


def _name(verify: object) -> str:
    return getattr(verify, "__name__", None) or getattr(verify, "name", None) or type(verify).__name__


def seed_sequence(rng: RNGLike) -> np.random.SeedSequence:
    """The seed sequence a kit run spawns its streams from, for any ``rng`` argument.

    ``None``, an integer seed or a sequence of them: ``SeedSequence(rng)`` (so ``rng=s`` draws
    what the kit drew with the former ``seed=s``); a ``SeedSequence`` as it is; a ``Generator``
    or ``BitGenerator``: a sequence seeded by four draws from it (its stream advances, as
    everywhere an ``rng`` is a Generator).

    >>> seed_sequence(7).entropy
    7
    >>> seed_sequence(np.random.default_rng(0)).entropy == seed_sequence(np.random.default_rng(0)).entropy
    True
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, (np.random.Generator, np.random.BitGenerator)):
        return np.random.SeedSequence([int(x) for x in as_rng(rng).integers(2**63, size=4)])
    as_rng(rng)  # a clear error for anything numpy cannot seed from
    return np.random.SeedSequence(rng)


def _instances(vocab_sizes, gammas, families, instances, rng):
    """The instances of a run (the families' plan, or the given ones, checked) and the seed
    sequence their randomness comes from (:func:`seed_sequence` of ``rng``); shared by
    :func:`check_verifier` and :func:`spectheory.testing.check_sampler`."""
    fams = list(FAMILIES) if families is None else list(families)
    for f in fams:
        if f not in ALL_FAMILIES:
            raise ValueError(f"families: unknown {f!r}; choose from {sorted(ALL_FAMILIES)}")
    if instances is None:
        return _plan(vocab_sizes, gammas, fams, rng)
    insts = list(instances)
    if not insts or not all(isinstance(i, Instance) for i in insts):
        raise ValueError("instances: expected a non-empty sequence of Instance")
    return insts, seed_sequence(rng)


def _plan(vocab_sizes, gammas, families, rng):
    fams = list(families)
    n_inst = max(len(fams), len(vocab_sizes), len(gammas))
    ss = seed_sequence(rng)
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
