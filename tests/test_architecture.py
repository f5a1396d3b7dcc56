"""The package's architecture, checked: no import cycles, rooms in layers, no string dispatch.

Every ``import`` statement of every module is read with :mod:`ast` (module-level and inside
functions alike: a lazy import is still a dependency). Two graphs must be acyclic:

- modules: ``a -> b`` when module ``a`` imports module ``b`` (imports of a package's
  ``__init__`` re-export lists are not edges: ``from spectheory.verifiers import get_verifier``
  depends on the module that defines it, which is what is followed);
- rooms (the sub-packages ``laws``, ``exact``, ``verifiers``, ...): ``A -> B`` when a module
  of ``A`` imports one of ``B``. The rooms form layers, e.g. ``exact`` never imports ``chain``
  or ``verifiers``, ``verifiers`` never imports ``montecarlo``, ``chain`` or ``analysis``, and
  ``analysis`` (fronts, bounds, closed forms) reads only ``verifiers``, ``exact`` and ``laws``.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spectheory"


def _modules():
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name, level, current, is_pkg):
    if level == 0:
        return name
    base = current.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _defining_module(target, attr=None):
    """The module an import really depends on: a submodule if ``attr`` is one, else ``target``."""
    if attr and f"{target}.{attr}" in MODULES:
        return f"{target}.{attr}"
    return target if target in MODULES else None


def _type_only(tree):
    """Nodes inside ``if TYPE_CHECKING:`` blocks (imports for annotations, never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def import_graph():
    graph = {m: set() for m in MODULES}
    for mod, path in MODULES.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text())
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                target = _resolve(node.module or "", node.level, mod, is_pkg)
                if not target.startswith("spectheory"):
                    continue
                for alias in node.names:
                    dep = _defining_module(target, alias.name)
                    if dep and dep != mod:
                        graph[mod].add(dep)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("spectheory") and alias.name in MODULES and alias.name != mod:
                        graph[mod].add(alias.name)
    return graph


def _skip_package_inits(graph):
    """Edges through a package's ``__init__`` (a list of re-exports) are replaced by nothing:
    importing a name from a package depends on the submodule that defines it, which the
    submodule edges already show; ``spectheory/__init__.py`` (the everyday verbs) likewise."""
    inits = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    return {m: {d for d in deps if d not in inits} for m, deps in graph.items() if m not in inits}


def find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "spectheory"


def room_graph():
    rooms = {}
    full = import_graph()
    for mod, deps in full.items():
        if mod == "spectheory":
            continue
        for dep in deps:
            a, b = room(mod), room(dep)
            if a != b and b != "spectheory":
                rooms.setdefault(a, set()).add(b)
    return rooms


def test_module_import_graph_has_no_cycle():
    cycle = find_cycle(_skip_package_inits(import_graph()))
    assert cycle is None, " -> ".join(cycle)


def test_rooms_form_layers():
    rooms = room_graph()
    cycle = find_cycle(rooms)
    assert cycle is None, "rooms import each other in a circle: " + " -> ".join(cycle)
    assert not rooms.get("exact", set()) & {"chain", "verifiers", "montecarlo"}, rooms.get("exact")
    assert not rooms.get("verifiers", set()) & {"chain", "montecarlo", "analysis"}, rooms.get("verifiers")
    # analysis (fronts, bounds, closed forms) sits on the rules: it reads verifiers and laws,
    # never the simulators, the chain constructors or anything above them
    # (_guards, _sizes, _progress: the input checks, size limits and progress bar every room uses)
    base = {"_guards", "_sizes", "_progress"}
    assert not rooms.get("analysis", set()) - base - {"laws", "verifiers", "exact"}, rooms.get("analysis")
    assert not rooms.get("laws", set()) - {"_guards", "_deprecation"}, rooms.get("laws")
    for low in (
        "laws",
        "exact",
        "verifiers",
        "analysis",
        "montecarlo",
        "chain",
        "decoder",
        "validation",
        "testing",
    ):
        assert "app" not in rooms.get(low, set()), f"{low} imports the application layer"


def test_every_module_imports_alone_in_a_fresh_interpreter():
    """Each module can be the first one imported (an import cycle that works only in one order
    fails here). torch-only rooms are imported when torch is there."""
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    names = [m for m in sorted(MODULES) if have_torch or room(m) not in ("decoder", "validation")]
    code = (
        "import importlib, sys\nbad = []\nfor name in sys.argv[1:]:\n"
        "    for m in [k for k in sys.modules if k.startswith('spectheory')]:\n        del sys.modules[m]\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception as exc:\n        bad.append(f'{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", out.stdout


#: Literal verifier, tree-rule and child-policy names that may appear in comparisons only where
#: the registries live (``verifiers/base.py``; child policies and tree verifiers are objects
#: whose methods are called, never names switched on).
_NAMES = "token|block|tree_rrs|tree_rrs_wo|tree_topk|traversal|traversal_iid|iid|wo|topk|rrs"
_DISPATCH = re.compile(
    rf"""(==|!=|\bin\b)\s*[(\[{{]?\s*["']({_NAMES})["']|["']({_NAMES})["']\s*(==|!=)|"""
    rf"""\bcase\s+["']({_NAMES})["']|"""
    r"""getattr\([^)]*_verify"""
)
#: ``for x in ("tree_rrs", ...)`` iterates over names, it does not switch on one.
_FOR_IN = re.compile(r"\bfor\s+[\w\s,()\[\]]+?\s+in\b")


def _dispatches(line):
    return bool(_DISPATCH.search(_FOR_IN.sub("for _ over", line)))


def test_dispatch_pattern_catches_name_comparisons():
    """The layer test below can fail: each of these lines is a string dispatch."""
    for line in (
        'if policy == "iid":',
        "elif rule != 'traversal':",
        'if name in ("tree_rrs", "block"):',
        'if "wo" == children:',
        'case "topk":',
        'step = chunk if policy != "wo" or k == 1 else 1',
    ):
        assert _dispatches(line), line
    for line in (
        'get_verifier("tree_rrs")',
        'CHILD_POLICIES["iid"]',
        'x = {"wo": 1}',
        'for v in ("iid", "wo"):',
    ):
        assert not _dispatches(line), line


@pytest.mark.parametrize("folder", ["spectheory"])
def test_no_verifier_name_dispatch_outside_the_registry(folder):
    offenders = []
    for path in (ROOT / folder).rglob("*.py"):
        if path.name == "base.py" and path.parent.name == "verifiers":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if _dispatches(line) and not line.lstrip().startswith(("#", ">>>")):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


def test_docs_cited_by_docstrings_exist():
    """Docstrings cite the project's docs/ (users never get DESIGN.md or REFERENCES.md)."""
    cited, missing, outside = set(), [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for name in re.findall(r"docs/([\w\-]+\.md)", text):
            cited.add(name)
        for bad in ("DESIGN.md", "REFERENCES.md", "CORE_CONTRACT"):
            if bad in text:
                outside.append(f"{path.relative_to(ROOT)} cites {bad}")
    missing = [n for n in sorted(cited) if not (ROOT / "docs" / n).exists()]
    assert outside == [], outside
    assert missing == [], missing


def test_no_lazy_name_is_shadowed_by_a_submodule():
    """A package's lazy name equal to one of its submodules' names is a trap: once anything imports
    the submodule (``import pkg.name``), ``pkg.name`` is the module, and ``from pkg import name``
    returns the module instead of the function (``spectheory.decoder.generate`` did this)."""
    import importlib
    import pkgutil

    import spectheory

    clashes = []
    for info in [*pkgutil.walk_packages(spectheory.__path__, "spectheory."), None]:
        name = "spectheory" if info is None else info.name
        if info is not None and not info.ispkg:
            continue
        pkg = importlib.import_module(name)
        exports = getattr(pkg, "_EXPORTS", {})
        subs = {s.name for s in pkgutil.iter_modules(pkg.__path__)}
        clashes += [f"{name}.{n}" for n in exports if n in subs]
    assert clashes == []
