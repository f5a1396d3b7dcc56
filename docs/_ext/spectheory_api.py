"""The API reference, generated from the packages' ``__all__`` lists when the build starts.

Every public package (``spectheory`` and each sub-package whose name has no leading
underscore) gets a page: its docstring, a table of its ``__all__`` names and a table of its
modules. Every public name gets one page of its own, under the *most specific* package whose
``__all__`` lists it (``spectheory.simulate`` and ``spectheory.montecarlo.simulate`` are one
function, documented once as the latter); every public module gets a page with its docstring
and the public names it defines. Nothing here is a hand list: a name added to or removed from
an ``__all__`` appears in or leaves the reference at the next build.

Cross-references follow Python's own name resolution. A role in a docstring is resolved in the
namespace of the module (or class) that holds the docstring, and a dotted target such as
``spectheory.kinds.tree.draft_tree.DraftTree`` is imported; either way the object found is linked to the
one page that documents it. A role whose target is not a documented object (a private helper, a
renamed function) stays unresolved, and the nitpicky build (``-n``) reports it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
import sys
import types
import typing
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docutils import nodes
from sphinx.util import logging

if TYPE_CHECKING:
    from docutils.nodes import Element
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

LOG = logging.getLogger(__name__)
ROOT_PACKAGE = "spectheory"
OUT = Path("api") / "generated"


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _modules() -> dict[str, types.ModuleType]:
    root = importlib.import_module(ROOT_PACKAGE)
    names = [ROOT_PACKAGE] + [m.name for m in pkgutil.walk_packages(root.__path__, ROOT_PACKAGE + ".")]
    out = {}
    for name in names:
        if not _public(name):
            continue
        try:
            out[name] = importlib.import_module(name)
        except ImportError as exc:  # an optional dependency (torch, transformers) is missing
            LOG.warning("API reference: cannot import %s (%s)", name, exc)
    return out


def public_names(package: types.ModuleType) -> list[str]:
    """``package.__all__``; without one, the names it defines or re-exports from itself."""
    names = getattr(package, "__all__", None)
    if names is None:
        names = [
            n
            for n, obj in vars(package).items()
            if not n.startswith("_")
            and not isinstance(obj, types.ModuleType)
            and getattr(obj, "__module__", package.__name__).startswith(package.__name__)
        ]
    return list(names)


def _key(obj: Any, name: str) -> Hashable:
    """Identity of a documented object: the object itself for classes, functions and modules
    (a bound or class method counts as its function); for a constant (an int, a dict) its name
    as well, since small constants are shared."""
    if isinstance(obj, (classmethod, staticmethod)) or inspect.ismethod(obj):
        obj = obj.__func__
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType, property)):
        return id(obj)
    return (name.rsplit(".", 1)[-1], id(obj))


def module_members(module: types.ModuleType) -> list[str]:
    """The names a module itself defines: its ``__all__``, then its other functions and classes
    (not imported ones) and upper-case constants without a leading underscore (docstrings link
    to helpers that ``__all__`` leaves out, and a reader following the link finds them here)."""
    out = list(getattr(module, "__all__", []))
    for name, obj in vars(module).items():
        if name.startswith("_") or name in out:
            continue
        if isinstance(obj, (type, types.FunctionType)):
            if obj.__module__ == module.__name__:
                out.append(name)
        elif name.isupper() and not isinstance(obj, types.ModuleType) and _assigned(module, name):
            out.append(name)
    return out


def _assigned(module: types.ModuleType, name: str) -> bool:
    """Whether ``name`` is assigned at the top level of the module's source (not imported)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return False
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if any(isinstance(t, ast.Name) and t.id == name for t in names):
            return True
    return False


@functools.cache
def imported_names(module_name: str) -> dict[str, str]:
    """``{name: dotted path}`` for every ``from X import name`` in a module's source, those under
    ``if TYPE_CHECKING:`` included (annotations name them, runtime never imports them)."""
    module = importlib.import_module(module_name)
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}"
    return out


def _is_typing_construct(obj: Any) -> bool:
    """A type variable or a type alias (``RNGLike = int | Generator | None``): no page of its own."""
    return isinstance(obj, (typing.TypeVar, types.GenericAlias, types.UnionType)) or type(obj).__module__ in (
        "typing",
        "typing_extensions",
    )


def class_members(cls: type) -> dict[str, object]:
    """The methods, properties and (annotated or constant) class attributes a class has from the project's
    classes (its own first, then those of its project bases, as the MRO orders them): what its
    page documents. Members of other libraries' bases (``torch.nn.Module``) and dataclass fields
    (the class docstring's ``Attributes`` or ``Parameters``) are left out."""
    out: dict[str, object] = {}
    fields = getattr(cls, "__dataclass_fields__", {})
    for klass in cls.__mro__:
        if not klass.__module__.startswith(ROOT_PACKAGE):
            continue
        annotated = vars(klass).get("__annotations__", {})
        for attr, member in vars(klass).items():
            if attr.startswith("_") or attr in fields or attr in out:
                continue
            if (
                isinstance(member, (types.FunctionType, property, classmethod, staticmethod))
                or attr in annotated
                or isinstance(member, (str, int, float, bool, tuple, type(None)))  # name = "iid"
            ):
                out[attr] = member
    return out


class Reference:
    """Packages, modules and public objects, and the one documented name of each object.

    An object is documented once: under the most specific package whose ``__all__`` lists it
    (a page of its own), else on the page of the module that defines it (a module member).
    """

    def __init__(self) -> None:
        self.modules = _modules()
        self.packages = {n: m for n, m in self.modules.items() if hasattr(m, "__path__")}
        self.exports = {p: public_names(m) for p, m in self.packages.items()}
        self.canonical: dict[object, str] = {}
        self.home: dict[str, tuple[str, str]] = {}  # documented name -> (package, name)
        self.members: dict[str, list[str]] = {}  # module -> the members documented on its page
        for pkg in sorted(self.packages, key=lambda p: (-p.count("."), p)):
            for name in self.exports[pkg]:
                if self._claim(getattr(self.packages[pkg], name), f"{pkg}.{name}"):
                    self.home[f"{pkg}.{name}"] = (pkg, name)
        for mod_name, module in self.modules.items():
            self.canonical[id(module)] = mod_name
            names = [n for n in module_members(module) if n not in self.exports.get(mod_name, [])]
            self.members[mod_name] = [n for n in names if self._claim(getattr(module, n), f"{mod_name}.{n}")]

    def _claim(self, obj: Any, full: str) -> bool:
        """Make ``full`` the documented name of ``obj`` (and of its own members) if it has none."""
        key = _key(obj, full)
        if key in self.canonical:
            return False
        self.canonical[key] = full
        if isinstance(obj, type):
            for attr, member in class_members(obj).items():
                if _key(member, attr) not in self.canonical:
                    self.canonical[_key(member, attr)] = f"{full}.{attr}"
        return True

    def documented(self, obj: Any, name: str) -> str | None:
        return self.canonical.get(_key(obj, name))

    # -- pages -----------------------------------------------------------------------------
    def write(self, srcdir: Path) -> None:
        out = srcdir / OUT
        out.mkdir(parents=True, exist_ok=True)
        pages = {"index.rst": self._index()}
        for pkg in self.packages:
            pages[f"{pkg}.rst"] = self._package_page(pkg)
        for name in self.modules:
            if name not in self.packages:
                pages[f"{name}.rst"] = self._module_page(name)
        for full, (pkg, name) in self.home.items():
            pages[f"{full}.rst"] = ":orphan:\n\n" + self._title(name) + self._object(pkg, name)
        for old in out.glob("*.rst"):
            if old.name not in pages:
                old.unlink()
        for fname, text in pages.items():
            path = out / fname
            if not path.exists() or path.read_text() != text:  # unchanged pages are not rebuilt
                path.write_text(text)

    @staticmethod
    def _title(text: str, underline: str = "=") -> str:
        return f"{text}\n{underline * len(text)}\n\n"

    def _index(self) -> str:
        lines = [self._title("API reference")]
        lines += [
            "Every public name of every public package, generated from the packages' ``__all__``",
            "lists at build time. A name exported by several packages (``spectheory.simulate`` is",
            "``spectheory.montecarlo.simulate``) has one page, under the most specific package.",
            "Each package page links its modules; a module's page shows its docstring, the public",
            "names it defines and the other functions and classes it holds.",
            "",
            ".. toctree::",
            "   :maxdepth: 1",
            "",
        ]
        lines += [f"   {pkg}" for pkg in sorted(self.packages)]
        return "\n".join(lines) + "\n"

    def _submodules(self, pkg: str) -> list[str]:
        depth = pkg.count(".") + 1
        return sorted(n for n in self.modules if n.startswith(pkg + ".") and n.count(".") == depth)

    def _package_page(self, pkg: str) -> str:
        lines = [self._title(pkg), f".. automodule:: {pkg}", "   :no-members:", ""]
        lines += [f".. currentmodule:: {pkg}", ""]
        if self.exports[pkg]:
            lines += [self._title("Public names", "-"), ".. autosummary::", ""]
            lines += [f"   {name}" for name in self.exports[pkg]] + [""]
        if self._submodules(pkg):
            lines += [self._title("Modules", "-"), ".. autosummary::", ""]
            lines += [f"   {sub.rsplit('.', 1)[1]}" for sub in self._submodules(pkg)] + [""]
        if self.members.get(pkg):
            lines += [self._members(pkg)]
        return "\n".join(lines)

    def _module_page(self, name: str) -> str:
        defined = sorted(
            full
            for full, (pkg, obj_name) in self.home.items()
            if getattr(getattr(self.packages[pkg], obj_name), "__module__", None) == name
        )
        lines = [":orphan:", "", self._title(name), f".. automodule:: {name}", "   :no-members:", ""]
        if defined:
            lines += [self._title("Public names defined here", "-"), ".. autosummary::", ""]
            lines += [f"   {full}" for full in defined] + [""]
        if self.members[name]:
            lines += [self._members(name)]
        return "\n".join(lines)

    def _members(self, module: str) -> str:
        head = self._title("Module members", "-")
        return head + "\n".join(self._object(module, n, self.modules[module]) for n in self.members[module])

    def _object(self, where: str, name: str, namespace: types.ModuleType | None = None) -> str:
        obj = getattr(namespace if namespace is not None else self.packages[where], name)
        lines = [f".. currentmodule:: {where}", ""]
        if _is_typing_construct(obj):  # an alias (``Moves = tuple[...]``) is callable, not a function
            lines += [f".. autodata:: {name}", "   :no-value:"]
        elif isinstance(obj, type) and issubclass(obj, BaseException):
            lines += [f".. autoexception:: {name}", "   :show-inheritance:"]
        elif isinstance(obj, type):
            lines += [f".. autoclass:: {name}", "   :show-inheritance:"]
            if class_members(obj):
                lines += [f"   :members: {', '.join(class_members(obj))}"]
        elif callable(obj):
            lines += [f".. autofunction:: {name}"]
        else:
            lines += [f".. autodata:: {name}", "   :no-value:"]
        return "\n".join(lines) + "\n\n"


# -- cross-references ------------------------------------------------------------------------
def _lookup(target: str, namespaces: list[dict]) -> Any:
    """The object a dotted ``target`` names: first in the given namespaces, then by import."""
    head, *rest = target.split(".")
    candidates = [ns[head] for ns in namespaces if head in ns]
    for obj in candidates:
        for part in rest:
            obj = getattr(obj, part, None)
            if obj is None:
                break
        else:
            return obj
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _namespaces(obj: Any) -> list[dict]:
    """Where a name in ``obj``'s docstring is looked up: the class (for a method), the module
    (for a class, the modules of its project bases too: an inherited method's module)."""
    out = []
    if isinstance(obj, type):
        out.append(dict(inspect.getmembers(obj)))
        out += [vars(sys.modules[k.__module__]) for k in obj.__mro__ if k.__module__.startswith(ROOT_PACKAGE)]
    qualname = getattr(obj, "__qualname__", "")
    module = inspect.getmodule(obj) if not isinstance(obj, types.ModuleType) else obj
    if module is not None and "." in qualname:
        owner = getattr(module, qualname.split(".")[0], None)
        if isinstance(owner, type):
            out.append(dict(inspect.getmembers(owner)))
    if module is not None:
        out.append(vars(module))
    return out


def _source_namespaces(env: BuildEnvironment, node: Element) -> tuple[list[dict], str | None, str | None]:
    """Where a short name in the reference ``node`` is looked up; the source's package, module.

    The page tells whose docstring holds the reference: an object page
    (``api/generated/spectheory.trees.DraftTree``) holds that object's docstring, a module or
    package page its module's and its members' (the members are defined in it); a method's
    docstring adds its class (``py:class``). Names resolve as Python resolves them there."""
    namespaces: list[dict] = []
    owner = None
    refdoc = node.get("refdoc") or ""
    if node.get("spectheory_source"):  # a summary row: the summarised object's docstring
        owner = _lookup(node["spectheory_source"], [])
    elif refdoc.startswith(OUT.as_posix() + "/"):
        owner = _lookup(refdoc.rsplit("/", 1)[1], [])
    context = node.get("py:module")
    if node.get("py:class") and context:
        cls = _lookup(f"{context}.{node['py:class']}", [])
        if isinstance(cls, type):
            namespaces += _namespaces(cls)
    if owner is not None:
        namespaces += _namespaces(owner)
    if context:
        namespaces.append(vars(importlib.import_module(context)))
    module = owner if isinstance(owner, types.ModuleType) else inspect.getmodule(owner)
    if module is None and context:
        module = importlib.import_module(context)
    package = getattr(module, "__package__", None) if module is not None else None
    return namespaces, package, getattr(module, "__name__", None)


def _foreign(obj: Any) -> bool:
    """An object another library defines (``pathlib.Path``, ``fractions.Fraction``)."""
    if isinstance(obj, types.ModuleType):
        return not obj.__name__.startswith(ROOT_PACKAGE)
    module = getattr(obj, "__module__", None)
    return (
        isinstance(obj, (type, types.FunctionType))
        and isinstance(module, str)
        and not module.startswith(ROOT_PACKAGE)
    )


def _field_owner(ref: Reference, target: str, node: Element, namespaces: list[dict]) -> str | None:
    """``:attr:`max_depth``` or ``:attr:`RoundOutcome.path```: a dataclass field or a constructor
    argument kept as an attribute is described in its class's docstring (``Attributes`` or
    ``Parameters``), so the reference links to the class."""
    owner_name, _, field = target.rpartition(".")
    if owner_name:
        owner = _lookup(owner_name, namespaces)
    elif node.get("py:class") and node.get("py:module"):
        owner = _lookup(f"{node['py:module']}.{node['py:class']}", [])
    else:
        return None
    if not isinstance(owner, type):
        return None
    parameters = set()
    for klass in owner.__mro__:  # a base's constructor may set it (TreeVerifier.children)
        if klass.__module__.startswith(ROOT_PACKAGE):
            try:
                parameters |= set(inspect.signature(klass).parameters)
            except (TypeError, ValueError):
                pass
    if field in getattr(owner, "__dataclass_fields__", {}) or field in parameters:
        return ref.documented(owner, owner.__name__)
    return None


def resolve_missing(app: Sphinx, env: BuildEnvironment, node: Element, contnode: Element) -> Element | None:
    """Link a reference that Sphinx did not find to the page of the object it names.

    A target is found as Python finds it: in the namespace of the docstring's class and module
    (``DecodingChain`` where the module imports it), as a sibling module (``.simulate``), by
    import (``spectheory.kinds.tree.draft_tree.DraftTree``, a path through the defining module or a
    re-export), or else as the one documented name that ends with it (``DecodingChain.protocol``
    in a module that does not import the class). Anything else stays unresolved: the nitpicky
    build reports it."""
    if node.get("refdomain") != "py":
        return None
    text = node.get("reftarget", "")
    target = text.lstrip("~.")
    ref = _reference(app)
    namespaces, package, module = _source_namespaces(env, node)
    found = None
    if package and (text.startswith(".") or "." in target):  # a sibling: ``.simulate``, ``abstraction.fit``
        found = _lookup(f"{package}.{target}", [])
    if found is None:
        found = _lookup(target, namespaces)
    head, _, rest = target.partition(".")
    imported = {}
    for namespace in reversed(namespaces):  # annotation-only imports of the modules searched
        if "__name__" in namespace and namespace["__name__"] in sys.modules:
            imported.update(imported_names(namespace["__name__"]))
    if module is not None:
        imported.update(imported_names(module))
    if found is None and head in imported:
        source = imported[head]  # imported for annotations only
        if not source.startswith(ROOT_PACKAGE + "."):
            return contnode  # another library's name (matplotlib's Figure): plain text
        found = _lookup(f"{source}.{rest}" if rest else source, [])
    if found is not None and (_is_typing_construct(found) or _foreign(found)):
        return contnode  # a type variable or alias, or an object of another library
    documented = ref.documented(found, target) if found is not None else None
    if documented is None and node.get("reftype") == "attr":
        documented = _field_owner(ref, target, node, namespaces)
    if documented is None:
        suffix = "." + target
        matches = {n for n in ref.canonical.values() if n.endswith(suffix)}
        documented = matches.pop() if len(matches) == 1 else None
    if documented is None or documented == text:
        return None
    domain = env.get_domain("py")
    node = node.deepcopy()
    node["reftarget"] = documented
    node["refspecific"] = False
    for reftype in (node["reftype"], "obj"):
        resolved = domain.resolve_xref(
            env, node.get("refdoc"), app.builder, reftype, documented, node, contnode
        )
        if resolved is not None:
            return resolved
    return None


RELATIVE = re.compile(r":(?:py:)?(func|class|meth|attr|data|obj|exc|mod):`(~?)(\.[\w.]+)`")


def absolute_relative_roles(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A relative target (``:mod:`.core```, ``:func:`~.abstraction.fit```) names what it names
    in a relative import: a sibling of the docstring's module (a submodule, for a package's
    docstring). It is written out absolutely here, so that it resolves wherever the text is
    shown (an autosummary row on the parent package's page, too)."""
    module = obj if isinstance(obj, types.ModuleType) else inspect.getmodule(obj)
    package = getattr(module, "__package__", None)
    if not package:
        return

    def absolute(match: re.Match) -> str:
        kind, tilde, target = match.groups()
        full = f"{package}.{target[1:]}"
        if _lookup(full, []) is None:
            return match.group(0)  # left to Sphinx (and to the nitpicky build)
        shown = target[1:].rsplit(".", 1)[-1] if tilde else target[1:]
        if kind in ("func", "meth") and app.config.add_function_parentheses:
            shown += "()"
        return f":{kind}:`{shown} <{full}>`"

    lines[:] = [RELATIVE.sub(absolute, line) for line in lines]


def drop_foreign_docstrings(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A method without a docstring of its own shows no docstring inherited from another
    library (``forward`` would show ``torch.nn.Module.forward``'s, with torch's roles)."""
    if what != "method" or getattr(obj, "__doc__", None) is not None:
        return
    owner = _lookup(name.rsplit(".", 1)[0], [])
    attr = name.rsplit(".", 1)[1]
    for klass in getattr(owner, "__mro__", ()):
        member = vars(klass).get(attr)
        if member is not None and getattr(member, "__doc__", None):
            if not klass.__module__.startswith(ROOT_PACKAGE):
                lines[:] = []
            return


ALIASES = "spectheory._typing"  # the type aliases of the annotations, shown by name


@functools.cache
def _expanded_aliases() -> list[tuple[str, str]]:
    """``(expanded text, alias name)`` for every alias of :data:`ALIASES`, longest first: autodoc
    writes an alias out in full (``ArrayLike`` as a union of seven private numpy types)."""
    from sphinx.util.typing import stringify_annotation

    module = importlib.import_module(ALIASES)
    pairs = {
        stringify_annotation(getattr(module, name), mode): name
        for name in module.__all__
        for mode in ("smart", "fully-qualified-except-typing", "fully-qualified")
    }
    return sorted(pairs.items(), key=lambda pair: -len(pair[0]))


def shorten_aliases(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None]:
    """Signatures name the aliases (``states: ArrayLike``), not their expansions.

    A dataclass field with a ``default_factory`` is shown ``= dict()``, not ``= <factory>``:
    that is not Python, and Sphinx would then split the signature at every comma
    (``dict[str, str]`` read as the targets ``dict[str`` and ``str]``)."""
    for expanded, alias in _expanded_aliases():
        if signature:
            signature = signature.replace(expanded, alias)
        if return_annotation:
            return_annotation = return_annotation.replace(expanded, alias)
    for field, spec in getattr(obj, "__dataclass_fields__", {}).items():
        factory = getattr(spec, "default_factory", None)
        if signature and callable(factory):
            call = f"{getattr(factory, '__name__', 'factory')}()"
            signature = re.sub(rf"\b({field}(: [^=]*?)?) ?= ?<factory>", rf"\1 = {call}", signature)
    return signature, return_annotation


def no_alias_signature(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[None, None] | None:
    """A type alias (``Moves = tuple[ndarray, ndarray]``) documented as data has no signature.

    It runs before numpydoc's handler, which would give the callable alias its origin class's
    signature (``tuple``'s), which autodoc cannot attach to data (an IndexError)."""
    if what == "data" and _is_typing_construct(obj):
        return None, None
    return None


def mark_summary_sources(app: Sphinx, doctree: nodes.document) -> None:
    """In an autosummary table, the summary of a row is the first sentence of that row's
    object: its references are marked with the object, to resolve in its namespace."""
    from sphinx import addnodes
    from sphinx.ext.autosummary import autosummary_table

    for table in doctree.findall(autosummary_table):
        for row in table.findall(nodes.row):
            entries = [e for e in row.children if isinstance(e, nodes.entry)]
            if len(entries) < 2:
                continue
            heads = list(entries[0].findall(addnodes.pending_xref))
            if not heads:
                continue
            for ref in entries[1].findall(addnodes.pending_xref):
                ref["spectheory_source"] = heads[0]["reftarget"]


_REFERENCES: dict[int, Reference] = {}  # the build's reference, by application


def _reference(app: Sphinx) -> Reference:
    return _REFERENCES[id(app)]


def generate(app: Sphinx) -> None:
    ref = Reference()
    _REFERENCES[id(app)] = ref
    ref.write(Path(app.srcdir))


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("builder-inited", generate)
    app.connect("missing-reference", resolve_missing)
    app.connect("doctree-read", mark_summary_sources)
    app.connect("autodoc-process-docstring", drop_foreign_docstrings)
    app.connect("autodoc-process-docstring", absolute_relative_roles)
    app.connect("autodoc-process-signature", no_alias_signature, priority=400)
    app.connect("autodoc-process-signature", shorten_aliases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["Reference", "public_names", "setup"]
