"""The package's architecture, checked: no import cycles, rooms in layers, no dispatch on names.

Every ``import`` statement of every module is read with :mod:`ast` (module-level and inside
functions alike: a lazy import is still a dependency). Two graphs are read: the runtime one
(``if TYPE_CHECKING:`` blocks left out) and the type one (those blocks included: the graph a
type checker reads, where a circle is a circle of meaning). In each, two graphs must be acyclic:

- modules: ``a -> b`` when module ``a`` imports module ``b`` (imports of a package's
  ``__init__`` re-export lists are not edges: ``from spectheory.chain import DecodingChain``
  depends on the module that defines it, ``spectheory.chain.decoding_chain``, which is what is followed,
  through ``from .x import name`` lines and lazy ``{name: module}`` tables alike);
- rooms (the sub-packages ``laws``, ``exact``, ``verifiers``, ...): ``A -> B`` when a module
  of ``A`` imports one of ``B``. The rooms form layers, e.g. ``exact`` never imports ``chain``
  or ``verifiers``, ``verifiers`` never imports ``montecarlo``, ``chain`` or ``analysis``, and
  ``analysis`` (fronts, bounds, closed forms) reads only ``verifiers``, ``exact`` and ``laws``.
  The engines annotate what they read of a chain, a tree or a rule with the protocols of
  ``spectheory/_protocols.py`` (a bottom room), not with the concrete classes above them.

Engines never switch on a name: not on a verifier's (``policy == "iid"``), not on a round's
kind or reading (``kind == "tree"``, ``rnd.reading == "gls"``), and no module keeps a table
keyed by round classes (``{PathRound: ...}``): a round is driven through its own methods.
"""

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spectheory"


def _modules(root=ROOT):
    """``{dotted name: path}`` of every module of the ``spectheory`` package under ``root``."""
    out = {}
    for path in (root / "spectheory").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
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


def _reexports(package, modules):
    """``{name: module}`` of what a package's ``__init__`` re-exports: its ``from .x import name``
    lines (``if TYPE_CHECKING:`` blocks included) and its lazy tables (a dict literal of strings,
    ``{"tree_generate": "tree_decode"}`` or ``{"DecodingChain": "spectheory.chain.decoding_chain"}``)."""
    out = {}
    for node in ast.walk(ast.parse(modules[package].read_text())):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(node.module or "", node.level, package, True)
            for alias in node.names:
                dep = f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target
                if dep in modules and dep != package:
                    out[alias.asname or alias.name] = dep
        elif isinstance(node, ast.Dict) and node.keys:
            pairs = list(zip(node.keys, node.values, strict=True))
            if all(isinstance(x, ast.Constant) and isinstance(x.value, str) for kv in pairs for x in kv):
                for k, v in pairs:
                    for dep in (v.value, f"{package}.{v.value}"):
                        if dep in modules and dep != package:
                            out.setdefault(k.value, dep)
    return out


def _reexport_tables(modules):
    return {m: _reexports(m, modules) for m, p in modules.items() if p.name == "__init__.py"}


_REEXPORTS = _reexport_tables(MODULES)


def _defining_module(target, attr, modules, reexports):
    """The module an import really depends on: a submodule if ``attr`` is one, the module that
    defines ``attr`` if ``target`` is a package re-exporting it (followed through packages),
    else ``target``."""
    seen = set()
    while attr and target in reexports and target not in seen and f"{target}.{attr}" not in modules:
        seen.add(target)
        if attr not in reexports[target]:
            break
        target = reexports[target][attr]
    if attr and f"{target}.{attr}" in modules:
        return f"{target}.{attr}"
    return target if target in modules else None


def _type_only(tree):
    """Nodes inside ``if TYPE_CHECKING:`` blocks (imports for annotations, never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def import_graph(type_checking=False, modules=None):
    """``{module: modules it imports}``; with ``type_checking`` the ``if TYPE_CHECKING:`` imports
    count too. ``modules`` (default: this package's) is ``{dotted name: path}``."""
    modules = MODULES if modules is None else modules
    reexports = _REEXPORTS if modules is MODULES else _reexport_tables(modules)
    graph = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text())
        skip = set() if type_checking else _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                target = _resolve(node.module or "", node.level, mod, is_pkg)
                if not target.startswith("spectheory"):
                    continue
                for alias in node.names:
                    dep = _defining_module(target, alias.name, modules, reexports)
                    if dep and dep != mod:
                        graph[mod].add(dep)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("spectheory") and alias.name in modules and alias.name != mod:
                        graph[mod].add(alias.name)
    return graph


def _skip_package_inits(graph, modules=None):
    """Edges through a package's ``__init__`` (a list of re-exports) are replaced by nothing:
    importing a name from a package depends on the submodule that defines it, which the
    submodule edges already show; ``spectheory/__init__.py`` (the everyday verbs) likewise."""
    modules = MODULES if modules is None else modules
    inits = {m for m, p in modules.items() if p.name == "__init__.py"}
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


def room_graph(type_checking=False, modules=None):
    rooms = {}
    for mod, deps in import_graph(type_checking, modules).items():
        if mod == "spectheory":
            continue
        for dep in deps:
            a, b = room(mod), room(dep)
            if a != b and b != "spectheory":
                rooms.setdefault(a, set()).add(b)
    return rooms


GRAPHS = pytest.mark.parametrize("type_checking", [False, True], ids=["runtime", "type_checking"])


@GRAPHS
def test_module_import_graph_has_no_cycle(type_checking):
    cycle = find_cycle(_skip_package_inits(import_graph(type_checking)))
    assert cycle is None, " -> ".join(cycle)


@GRAPHS
def test_rooms_form_layers(type_checking):
    rooms = room_graph(type_checking)
    cycle = find_cycle(rooms)
    assert cycle is None, "rooms import each other in a circle: " + " -> ".join(cycle)
    # _protocols (what the engines read of a chain, a tree, a rule) sits at the bottom
    assert not rooms.get("_protocols", set()) - {"_typing"}, rooms.get("_protocols")
    assert not rooms.get("exact", set()) & {"chain", "verifiers", "montecarlo"}, rooms.get("exact")
    assert not rooms.get("verifiers", set()) & {"chain", "montecarlo", "analysis", "trees"}, rooms.get(
        "verifiers"
    )
    # analysis (fronts, bounds, closed forms) sits on the rules: it reads verifiers and laws,
    # never the simulators, the chain constructors or anything above them
    # (_guards, _sizes, _progress: the input checks, size limits and progress bar every room uses)
    base = {"_guards", "_sizes", "_progress", "_protocols"}
    assert not rooms.get("analysis", set()) - base - {"laws", "verifiers", "exact"}, rooms.get("analysis")
    # (laws' package names load on first use: _lazy, a stdlib-only helper)
    assert not rooms.get("laws", set()) - {"_guards", "_lazy"}, rooms.get("laws")
    # the round contract and the Monte Carlo driver import no round kind (the kinds live in
    # kinds/, the theory built on them in trees/ and stopping/, all above rounds/)
    assert not rooms.get("rounds", set()) & {"kinds", "trees", "stopping", "montecarlo"}, rooms.get("rounds")
    # child policies (how a tree is drafted) sit below the rules that read them; the rules
    # room holds rules only and imports no round kind
    assert not rooms.get("children", set()) - base - {"laws", "_typing"}, rooms.get("children")
    assert not rooms.get("verifiers", set()) & {"kinds", "rounds"}, rooms.get("verifiers")
    for low in (
        "laws",
        "exact",
        "verifiers",
        "analysis",
        "montecarlo",
        "chain",
        "decoder",
        "validation",
        "tuning",
        "abstraction",
        "testing",
    ):
        assert "app" not in rooms.get(low, set()), f"{low} imports the application layer"


def _toy_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return _modules(root)


def test_cycle_finder_can_fail(tmp_path):
    """The graph tests above can fail: a circle closed only by an annotation import, through a
    package's re-export, is found in the type graph and not in the runtime one."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    modules = _toy_package(
        tmp_path,
        {
            "spectheory/__init__.py": "",
            "spectheory/chain/__init__.py": "from .decoding_chain import Chain\n",
            "spectheory/chain/decoding_chain.py": "from ..exact.engine import value\n\nclass Chain: ...\n",
            "spectheory/exact/__init__.py": "",
            "spectheory/exact/engine.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from ..chain import Chain

                def value(chain: "Chain") -> float: ...
            """,
        },
    )
    runtime = _skip_package_inits(import_graph(False, modules), modules)
    typed = _skip_package_inits(import_graph(True, modules), modules)
    assert find_cycle(runtime) is None
    assert find_cycle(typed) == [
        "spectheory.chain.decoding_chain",
        "spectheory.exact.engine",
        "spectheory.chain.decoding_chain",
    ]
    assert find_cycle(room_graph(True, modules)) == ["chain", "exact", "chain"]


def test_every_module_imports_alone_in_a_fresh_interpreter():
    """Each module can be the first one imported (an import cycle that works only in one order
    fails here). torch-only rooms are imported when torch is there."""
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    names = [
        m
        for m in sorted(MODULES)
        if have_torch
        or (
            room(m) not in ("decoder", "validation", "tuning") and m != "spectheory.abstraction.hidden_states"
        )
    ]
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
#: Round kinds and batch readings (what ``round_kind()`` and ``BatchRound.reading`` returned).
#: A round is driven through its methods (``play``, ``exact``, ``decode``, ``check_plan``,
#: ``along_path``), so nothing compares a kind or a reading. The subject must name a kind or a
#: reading (``kind``, ``rnd.reading``, ``round_kind(rnd)``): ``information == "path"`` (an
#: option of ``optimal_policy``) is no round kind.
_KINDS = "path|policy|tree|batch|dynamic|dynamic_tree|gls|first_token|all_agreeing|naive_hsd|medusa"
_SUBJECT = r"""[\w.]*(?:kind|reading)\w*(?:\([^()]*\))?"""
_KIND_DISPATCH = re.compile(
    rf"""{_SUBJECT}\s*(==|!=|\bnot\s+in\b|\bin\b)\s*[(\[{{]?\s*["']({_KINDS})["']|"""
    rf"""["']({_KINDS})["']\s*(==|!=)\s*{_SUBJECT}|"""
    rf"""\bmatch\s+{_SUBJECT}\s*:"""
)
#: ``for x in ("tree_rrs", ...)`` iterates over names, it does not switch on one.
_FOR_IN = re.compile(r"\bfor\s+[\w\s,()\[\]]+?\s+in\b")


def _dispatches(line, pattern=_DISPATCH):
    return bool(pattern.search(_FOR_IN.sub("for _ over", line)))


def _offenders(pattern, skip=()):
    out = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(ROOT).as_posix() in skip:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if _dispatches(line, pattern) and not line.lstrip().startswith(("#", ">>>")):
                out.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    return out


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


def test_kind_pattern_catches_kind_and_reading_comparisons():
    """The kind/reading test below can fail: each of these lines switches on a kind or a reading."""
    for line in (
        'if kind == "path":',
        'elif kind != "tree":',
        'if round_kind(rnd) == "tree":',
        'has_tree = any(round_kind(r) == "tree" for r in configs)',
        'if rnd.reading == "gls" and rnd.gamma is not None:',
        'coupling = "gls" if self.reading == "gls" else "rrs"',
        'elif kind in ("path", "policy"):',
        'if self.kind not in ["batch", "dynamic"]:',
        'if "first_token" == reading:',
        "work = depth + 1 if kind != 'tree' else depth",
        "match rnd.kind:",
    ):
        assert _dispatches(line, _KIND_DISPATCH), line
    for line in (
        'if information == "path":',  # an option of optimal_policy, not a round kind
        'if computation == "tree":',  # a size estimate's name
        'BatchRound(2, 3, reading="tree")',
        'READINGS = {"first_token": ("tree_rrs", False), "tree": ("tree_rrs", True)}',
        'for kind in ("path", "tree"):',
        'fallback = self.step.get("path", 0.0)',
    ):
        assert not _dispatches(line, _KIND_DISPATCH), line


@pytest.mark.parametrize("folder", ["spectheory"])
def test_no_verifier_name_dispatch_outside_the_registry(folder):
    offenders = _offenders(_DISPATCH, skip={"spectheory/verifiers/base.py"})
    assert offenders == [], "\n".join(offenders)


def test_no_kind_or_reading_dispatch():
    offenders = _offenders(_KIND_DISPATCH)
    assert offenders == [], "\n".join(offenders)


def _round_tables(tree):
    """Lines of ``tree`` (a parsed module) that keep a table keyed by round classes: a dict
    literal with a ``*Round`` class among its keys, a dict comprehension keyed so (or over a
    literal of round classes), a sequence
    of ``(SomeRound, value)`` pairs, or a module-level ``_DISPATCH`` / ``_CHECKS`` table."""

    def is_round_class(node):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
        return bool(re.fullmatch(r"_?[A-Z]\w*Round", name or ""))

    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(k is not None and is_round_class(k) for k in node.keys):
            lines.add(node.lineno)
        elif isinstance(node, ast.DictComp) and (
            is_round_class(node.key)
            or any(
                isinstance(g.iter, (ast.Tuple, ast.List, ast.Set))
                and g.iter.elts
                and all(is_round_class(e) for e in g.iter.elts)
                for g in node.generators
            )
        ):
            lines.add(node.lineno)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            pairs = [e for e in node.elts if isinstance(e, ast.Tuple) and e.elts]
            if len(pairs) >= 2 and all(is_round_class(e.elts[0]) for e in pairs):
                lines.add(node.lineno)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for t in targets:
            if isinstance(t, ast.Name) and t.id in ("_DISPATCH", "_CHECKS"):
                lines.add(node.lineno)
    return sorted(lines)


def test_round_table_finder_can_fail():
    """The test below can fail: each of these modules keeps a table of round classes."""
    for code in (
        "_DISPATCH = {PathRound: speculative_generate, TreeRound: tree_generate}",
        "_CHECKS = {rounds.PathRound: _path}",
        "_CHECKS: dict = {}",
        "def f():\n    return {cls: 1 for cls in (PathRound, TreeRound)}[PathRound]",
        "t = {cls: k for cls, k in x}\nu = {BatchRound: 2}",
        'KINDS = ((PathRound, "path"), (PolicyRound, "policy"), (TreeRound, "tree"))',
    ):
        assert _round_tables(ast.parse(code)), code
    for code in (
        'x = {"path": 1, Round.play: 2}',
        "isinstance(rnd, (PathRound, TreeRound))",
        "ENGINES = ('monte_carlo', 'exact')",
        "pairs = [(a, 1), (b, 2)]",
        'CHECKS = {"determinism": ("the same seed gives the same output", "exact")}',
    ):
        assert not _round_tables(ast.parse(code)), code


def test_no_table_keyed_by_round_classes():
    offenders = []
    for _, path in sorted(MODULES.items()):
        for line in _round_tables(ast.parse(path.read_text())):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
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


#: The module basenames that stand in more than one folder, each with the one meaning it has in
#: every folder (a module named after a concept says which; any other repeat is a test failure).
SHARED_BASENAMES = {
    "__init__.py": "a package",
    "round.py": "a round kind's Round subclass (kinds/<kind>/round.py)",
    "exact.py": "a round kind's exact engine (kinds/<kind>/exact.py)",
    "base.py": "the base class of its room (Round, Verifier, Cost)",
    "result.py": "the result type of its engine (SimulationResult, ExactResult)",
    "driver.py": "the one loop of its engine (Monte Carlo, the real decoder)",
    "longrun.py": "the long-run optimum of its room (trees, draft-length policies)",
    "examples.py": "ready-made instances of its room's object (chains, cost models)",
}


def repeated_basenames(root=PACKAGE):
    """``{basename: [paths]}`` of the package's modules whose file name stands in two folders."""
    seen = {}
    for path in sorted(root.rglob("*.py")):
        seen.setdefault(path.name, []).append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in seen.items() if len(paths) > 1}


def test_repeated_basenames_share_one_meaning():
    unexplained = {
        name: paths for name, paths in repeated_basenames().items() if name not in SHARED_BASENAMES
    }
    assert not unexplained, (
        f"modules of the same name in several folders, meaning different things: {unexplained}"
    )


def test_repeated_basename_finder_can_fail(tmp_path):
    for path in ("pkg/a/stats.py", "pkg/b/stats.py", "pkg/b/round.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert repeated_basenames(tmp_path / "pkg") == {"stats.py": ["a/stats.py", "b/stats.py"]}


@GRAPHS
def test_drivers_import_no_round_kind(type_checking):
    """The engines' loops (the Monte Carlo driver, the decoder's driver) drive a round through its
    methods and a step object: neither imports a round kind, directly or through what it imports."""
    graph = import_graph(type_checking)
    for driver in ("spectheory.rounds.driver", "spectheory.decoder.driver"):
        seen, todo = set(), [driver]
        while todo:
            mod = todo.pop()
            for dep in graph.get(mod, ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        kinds = sorted(m for m in seen if room(m) in ("kinds", "trees", "stopping"))
        assert not kinds, f"{driver} imports round kinds: {kinds}"
