"""Every docstring example of the library runs and prints what it says (the examples are documentation)."""

import doctest
import importlib
import pkgutil

import pytest

import spectheory

MODULES = sorted(m.name for m in pkgutil.walk_packages(spectheory.__path__, "spectheory."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name.startswith(
        (
            "spectheory.decoder",
            "spectheory.validation",
            "spectheory.tuning",
            "spectheory.abstraction.hidden_states",
            "spectheory.cost.fit_forward",
            "spectheory.cost.measure",
            "spectheory.testing.torch",
            "spectheory.verifiers.torch",
        )
    ):
        pytest.importorskip("torch")
    if name == "spectheory.decoder.hf":
        pytest.importorskip("transformers")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
