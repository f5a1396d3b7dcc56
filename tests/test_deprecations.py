"""No old name outlives its release: every deprecation states ``remove_in`` and it lies ahead.

Every module of the package is read with :mod:`ast`. A call of a helper of
:mod:`spectheory._deprecation` must pass ``remove_in=`` as a literal release number greater
than the package's version (once the version reaches it, this test fails until the old name
is removed); a :class:`DeprecationWarning` raised by hand, outside the helpers, is refused (it
would carry no ``remove_in``).
"""

import ast
import warnings
from pathlib import Path

import pytest

import spectheory
from spectheory import _deprecation
from spectheory._deprecation import (
    deprecated_alias,
    moved_module,
    moved_names,
    parse_version,
    warn_deprecated,
)

PACKAGE = Path(spectheory.__file__).resolve().parent
HELPERS = {"moved_module", "moved_names", "deprecated_alias", "warn_deprecated"}
VERSION = parse_version(spectheory.__version__)


def _calls():
    """``(file, line, helper, remove_in or None)`` for every helper call in the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_deprecation.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name not in HELPERS:
                continue
            given = [k.value for k in node.keywords if k.arg == "remove_in"]
            literal = given[0].value if given and isinstance(given[0], ast.Constant) else None
            out.append((path.relative_to(PACKAGE.parent), node.lineno, name, literal))
    return out


def _hand_written_warnings():
    """``(file, line)`` of ``warnings.warn(..., DeprecationWarning)`` outside the helpers."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_deprecation.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "warn"
            ):
                args = list(node.args[1:2]) + [k.value for k in node.keywords if k.arg == "category"]
                if any(isinstance(a, ast.Name) and a.id == "DeprecationWarning" for a in args):
                    out.append((path.relative_to(PACKAGE.parent), node.lineno))
    return out


def test_every_deprecation_is_removed_before_its_release():
    stale = [
        (str(f), line, name, remove_in)
        for f, line, name, remove_in in _calls()
        if remove_in is None or parse_version(remove_in) <= VERSION
    ]
    assert not stale, (
        f"version {spectheory.__version__}: remove these deprecations (or give remove_in as a "
        f"literal release after the current one): {stale}"
    )


def test_no_deprecation_warning_is_raised_by_hand():
    assert not _hand_written_warnings(), "use spectheory._deprecation.warn_deprecated(..., remove_in=...)"


def test_the_scan_sees_calls_and_stale_versions(tmp_path, monkeypatch):
    """The scanner finds a helper call, reads its remove_in, and flags a missing one."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text(
        "from ._deprecation import moved_names, warn_deprecated\n"
        "__getattr__ = moved_names(__name__, {}, remove_in='0.1.0')\n"
        "def f():\n    warn_deprecated('a', 'b', remove_in=VERSION)\n"
        "import warnings\nwarnings.warn('x', DeprecationWarning)\n"
    )
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    found = {(name, remove_in) for _, _, name, remove_in in _calls()}
    assert found == {("moved_names", "0.1.0"), ("warn_deprecated", None)}
    assert [line for _, line in _hand_written_warnings()] == [6]


def test_every_helper_requires_remove_in():
    with pytest.raises(TypeError):
        moved_names("pkg", {})  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        moved_module("a", "b")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        deprecated_alias(len, "old_len")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        warn_deprecated("a", "b")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="remove_in"):
        moved_names("pkg", {}, remove_in="next")
    assert set(_deprecation.__all__) >= HELPERS


def test_the_helpers_warn_with_the_release():
    getattr_ = moved_module("spectheory.old", "spectheory.laws.distributions", remove_in="9.1.0")
    with pytest.warns(DeprecationWarning, match="removed in 9.1.0; use spectheory.laws.distributions.tv"):
        assert getattr_("tv") is spectheory.tv
    with pytest.raises(AttributeError):
        getattr_("no_such_name")
    old_len = deprecated_alias(len, "old_len", remove_in="9.1.0")
    with pytest.warns(DeprecationWarning, match="old_len is deprecated and will be removed in 9.1.0"):
        assert old_len([1, 2]) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert moved_names("pkg", {}, fallback=str, remove_in="9.1.0")("x") == "x"


def test_the_package_and_pyproject_agree_on_the_version():
    import tomllib

    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == spectheory.__version__
