"""The analysis that left ``spectheory.verifiers`` keeps its old import paths one release, each
use warning with the new place; the new places hold the same objects."""

import importlib
import subprocess
import sys

import pytest

import spectheory.analysis as analysis
import spectheory.verifiers as verifiers
from spectheory.verifiers import optimal_coupling

OLD_MODULES = [
    "sequence_front",
    "sequence_front_gaps",
    "sequence_front_lp",
    "sequence_front_tree",
    "pareto",
    "batch_closed_form",
    "batch_chain",
]


@pytest.mark.parametrize("name", OLD_MODULES)
def test_old_module_paths_forward_with_a_warning(name):
    old = importlib.import_module(f"spectheory.verifiers.{name}")
    new = importlib.import_module(f"spectheory.analysis.{name}")
    for attr in new.__all__:
        with pytest.warns(DeprecationWarning, match=f"spectheory.analysis.{name}"):
            assert getattr(old, attr) is getattr(new, attr)
    with pytest.raises(AttributeError):
        old.no_such_name  # noqa: B018


def test_old_optimal_transport_path_splits_between_analysis_and_the_rule():
    old = importlib.import_module("spectheory.verifiers.optimal_transport")
    with pytest.warns(DeprecationWarning, match="spectheory.analysis.optimal_transport"):
        assert old.optimal_multidraft_acceptance is analysis.optimal_multidraft_acceptance
    with pytest.warns(DeprecationWarning, match="spectheory.verifiers.optimal_coupling"):
        assert old.optimal_verify is optimal_coupling.optimal_verify


def test_names_the_verifiers_package_reexported_still_resolve_with_a_warning():
    for name in ("optimal_sequence_front", "batch_expected_rejections", "pareto_front", "sequence_tv"):
        with pytest.warns(DeprecationWarning, match=f"spectheory.analysis.*{name}"):
            assert getattr(verifiers, name) is getattr(analysis, name)
    with pytest.raises(AttributeError):
        verifiers.no_such_name  # noqa: B018


def test_importing_the_packages_is_silent():
    code = (
        "import spectheory.verifiers, spectheory.analysis\n"
        "from spectheory.verifiers import pareto, sequence_front\n"  # modules: silent until used
        "import spectheory.verifiers.optimal_transport\n"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_rules_and_analysis_are_disjoint():
    """verifiers/ holds rules, analysis/ the rest: no public name in both packages."""
    assert not set(verifiers.__all__) & set(analysis.__all__)
