"""Sphinx configuration of the spectheory documentation site.

Build (from the repository root; warnings are errors, every cross-reference must resolve):

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

The API reference (docs/api/generated/) and the gallery (docs/gallery/generated/) are written
by the two extensions in docs/_ext/ when the build starts: the API pages from the packages'
``__all__`` lists, the gallery pages from the scripts in figures/ (read, never run).
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from pathlib import Path

from sphinx.application import Sphinx

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

import spectheory  # noqa: E402

project = "spectheory"
author = "the spectheory authors"
copyright = "the spectheory authors"
release = version = spectheory.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "spectheory_api",
    "spectheory_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
templates_path: list[str] = []

# -- the project's own pages -------------------------------------------------------------------
# CHANGELOG.md, CONTRIBUTING.md and LICENSE live at the repository root; each one present gets a
# page in project/generated/ that includes it, listed by project/generated/index.md.
_PROJECT = DOCS / "project" / "generated"


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:  # an unchanged page is not rebuilt
        path.write_text(text)


def _project_pages() -> None:
    _PROJECT.mkdir(parents=True, exist_ok=True)
    pages = []
    for name in ("CHANGELOG.md", "CONTRIBUTING.md", "LICENSE"):
        page = _PROJECT / f"{Path(name).stem.lower()}.md"
        if not (ROOT / name).exists():
            page.unlink(missing_ok=True)
            continue
        if name.endswith(".md"):
            body = f"```{{include}} ../../../{name}\n```\n"
        else:  # plain text: a title, then the text as it is
            body = f"# License\n\n```{{literalinclude}} ../../../{name}\n:language: text\n```\n"
        _write(page, body)
        pages.append(page.stem)
    toc = "".join(f"{p}\n" for p in pages)
    _write(_PROJECT / "index.md", f"# Project\n\n```{{toctree}}\n:maxdepth: 1\n\n{toc}```\n")


_project_pages()

# -- autodoc / autosummary / numpydoc ----------------------------------------------------------
autosummary_generate = False  # spectheory_api writes the pages itself (one per object)
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
numpydoc_show_class_members = False  # autodoc's :members: lists the methods, once
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
add_module_names = False

# -- markdown notes ----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# -- nitpicky: every role resolves, except names of other projects -----------------------------
# The build has no network, so intersphinx (numpy, scipy, torch, Python) cannot be used: names
# of the standard library and of the dependencies, which annotations and docstrings mention,
# cannot be linked and are not checked. Every name of the project itself still must resolve.
_EXTERNAL = sorted(
    set(sys.stdlib_module_names)
    | {"numpy", "np", "scipy", "sympy", "torch", "transformers", "safetensors", "matplotlib"}
    | {"dask", "distributed", "hypothesis", "tqdm", "threadpoolctl", "numpy.typing"}
)
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(re.escape(m) for m in _EXTERNAL)})(\..*)?"),
    # the short forms annotations take once ``from numpy.typing import ArrayLike`` etc. ran
    (r"py:class", r"(ArrayLike|NDArray|Generator|Tensor)"),
    # the stopping engines' private kernel tables, which their helpers' annotations name
    (r"py:class", r"(spectheory\.stopping\._kernels\.)?Kernels"),
    # private modules (``spectheory._sizes``, ``spectheory._progress``, ``spectheory.app._step_launcher``)
    # are not on the site; docstrings may still name them and their classes
    (r"py:.*", r"spectheory(\.\w+)*\._\w+(\.\w+)*"),
    (r"py:class", r"Estimate"),
    # the alias ``spectheory._typing.RNGLike`` (``int | Generator | None``) by its short name,
    # where an inherited signature shows it outside the module that imports it
    (r"py:class", r"RNGLike"),
    # the structural types of the private ``spectheory._protocols`` (imported under
    # ``if TYPE_CHECKING:``), and private classes a public signature names (``_Level``)
    (r"py:class", r"(ChainLike|TreeLike|TreeRule|ExactRule)"),
    (r"py:class", r"_[A-Za-z]\w*"),
]

# -- HTML --------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"spectheory {release}"
html_static_path = ["_static"]
html_css_files = ["gallery.css"]
html_show_sourcelink = False

# MathJax from the sphinx-mathjax-offline package (one self-contained file, tex-svg.js), so the
# pages render their math without a network; without the package, Sphinx's default (a CDN).
try:
    _MATHJAX = Path(importlib.import_module("sphinx-mathjax-offline").__file__).parent / "static" / "mathjax"
except ImportError:
    _MATHJAX = None
if _MATHJAX is not None and (_MATHJAX / "tex-svg.js").exists():
    mathjax_path = "mathjax/tex-svg.js"


def _copy_mathjax(app: Sphinx, exc: Exception | None) -> None:
    if exc is None and _MATHJAX is not None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "mathjax"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_MATHJAX / "tex-svg.js", target / "tex-svg.js")


_RST_ROLE = re.compile(r"(?<![\w`]):(func|class|mod|meth|attr|data|obj|exc):(`[^`]+`)")


def _myst_roles(app: Sphinx, docname: str, source: list[str]) -> None:
    """The notes (docs/*.md) write Sphinx roles as in docstrings, ``:class:`X```; MyST spells
    them ``{class}`X```. They are rewritten when read (outside fenced code), so they render as
    links and the nitpicky build checks them, while the files stay as GitHub shows them."""
    if not app.env.doc2path(docname).suffix == ".md":
        return
    parts = re.split(r"(^```.*?^```)", source[0], flags=re.M | re.S)
    source[0] = "".join(p if i % 2 else _RST_ROLE.sub(r"{\1}\2", p) for i, p in enumerate(parts))


def setup(app: Sphinx) -> None:
    app.connect("build-finished", _copy_mathjax)
    app.connect("source-read", _myst_roles)
    # docs/architecture.md draws its call graphs as ```mermaid blocks (GitHub renders them); the
    # site has no mermaid renderer offline, so it shows their source as plain text
    from pygments.lexers.special import TextLexer

    app.add_lexer("mermaid", TextLexer)
