"""``spectheory.verifiers.round_laws``: the names that moved to one module per concept in 0.3.0
(the draft-by-draft walker to ``stepwise``, GLS's rule to ``gls``, TLI's to ``tli``) still work
from the old module until 0.4.0, with a warning naming their new home."""

import importlib
import warnings

import pytest

from spectheory.verifiers import round_laws

MOVED = {
    "stepwise_round_law": "spectheory.verifiers.stepwise",
    "ratio_step": "spectheory.verifiers.stepwise",
    "GLSDrafts": "spectheory.verifiers.gls",
    "GLS_K2": "spectheory.verifiers.gls",
    "tli_round_law": "spectheory.verifiers.tli",
    "TLIRule": "spectheory.verifiers.tli",
    "TLI": "spectheory.verifiers.tli",
}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_name_warns_and_is_the_new_object(name):
    home = MOVED[name]
    with pytest.warns(DeprecationWarning, match=f"removed in 0.4.0; use {home}.{name}"):
        old = getattr(round_laws, name)
    assert old is getattr(importlib.import_module(home), name)
    assert name not in round_laws.__all__


def test_the_module_own_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in round_laws.__all__:
            getattr(round_laws, name)
