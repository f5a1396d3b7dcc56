"""The public surface stays curated: a short top level, at most 25 names per subpackage, and
every name of every ``__all__`` (packages and modules alike) resolves.

The rest of the library is importable from the module that defines it; a package's
``__all__`` (and its lazy export table) holds its everyday names, which the API reference
lists (``docs/_ext/spectheory_api.py``). Raising a limit here is a decision, not a side effect.
"""

import importlib
import importlib.util
import pkgutil

import pytest

import spectheory

TOP_LEVEL_MAX = 32
SUBPACKAGE_MAX = 25
HAVE_TORCH = importlib.util.find_spec("torch") is not None
NEEDS_TORCH = (
    "spectheory.decoder",
    "spectheory.validation",
    "spectheory.tuning",
    "spectheory.abstraction.hidden_states",
    "spectheory.testing.torch",
    "spectheory.verifiers.torch",
)

SUBPACKAGES = sorted(
    f"spectheory.{m.name}"
    for m in pkgutil.iter_modules(spectheory.__path__)
    if m.ispkg and not m.name.startswith("_")
)
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(spectheory.__path__, "spectheory.")
    if not any(part.startswith("_") for part in m.name.split("."))
)


def test_the_top_level_is_short():
    names = spectheory.__all__
    assert len(names) <= TOP_LEVEL_MAX, f"spectheory.__all__ has {len(names)} names (at most {TOP_LEVEL_MAX})"
    assert len(names) == len(set(names))


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_subpackage_lists_at_most_25_names(package):
    names = importlib.import_module(package).__all__
    assert len(names) <= SUBPACKAGE_MAX, (
        f"{package}.__all__ has {len(names)} names (at most {SUBPACKAGE_MAX})"
    )
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]


@pytest.mark.parametrize("name", ["spectheory", *MODULES])
def test_every_name_of_every_all_resolves(name):
    if name.startswith(NEEDS_TORCH) and not HAVE_TORCH:
        pytest.skip("needs torch")
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not hold: {missing}"


def test_a_lazy_table_holds_only_listed_names():
    """A lazy package's export table is its ``__all__``: a name left out of the list is not
    loaded through the package either (it is imported from its module)."""
    import spectheory.validation as validation

    assert set(validation._EXPORTS) == set(validation.__all__)
    assert set(spectheory._LAZY) <= set(spectheory.__all__)
    with pytest.raises(AttributeError):
        validation.model_device  # noqa: B018  (not listed: spectheory.validation.lossless.model_device)


def test_the_checks_see_an_oversized_list(monkeypatch):
    import spectheory.trees as trees

    monkeypatch.setattr(trees, "__all__", [f"n{i}" for i in range(SUBPACKAGE_MAX + 1)])
    with pytest.raises(AssertionError, match="at most 25"):
        test_each_subpackage_lists_at_most_25_names("spectheory.trees")
    monkeypatch.setattr(trees, "__all__", ["no_such_name"])
    with pytest.raises(AssertionError, match="no_such_name"):
        test_every_name_of_every_all_resolves("spectheory.trees")
