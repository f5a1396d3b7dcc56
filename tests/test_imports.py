"""The library imports without torch (it is the optional `decoder` extra)."""

import subprocess
import sys
from pathlib import Path

import pytest

BLOCK_TORCH = (
    "import sys\n"
    "class _NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('torch blocked for this test')\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)


def test_library_imports_and_works_without_torch():
    code = BLOCK_TORCH + (
        "import numpy as np\n"
        "import spectheory as st, spectheory.verifiers, spectheory.testing, spectheory.app.cli, spectheory.decoder\n"
        "chain = st.DecodingChain.random(4, rng=0)\n"
        "assert st.simulate(chain, 8, 2, 100, rng=0).target_calls.shape == (100,)\n"
        "try:\n"
        "    spectheory.decoder.load_model\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('the decoder should need torch')\n"
        "assert 'torch' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


HEAVY = ("torch", "scipy.stats", "matplotlib", "sympy")


def _fresh(code):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_spectheory_is_light():
    """``import spectheory`` loads none of the heavy libraries, nor does everyday use of the
    chain, its exact values and the simulator (scipy.stats, torch, matplotlib and sympy load only
    where a function needs them)."""
    out = _fresh(
        "import sys\n"
        f"HEAVY = {HEAVY!r}\n"
        "import spectheory as st\n"
        "print([m for m in HEAVY if m in sys.modules])\n"
        "chain = st.DecodingChain.random(4, rng=0)\n"
        "chain.protocol(8, gamma=2); chain.expected_tokens_per_call(8, 2)\n"
        "st.simulate(chain, 8, 2, 50, rng=0); st.iid_tokens_per_call(0.5, 3)\n"
        "print([m for m in HEAVY if m in sys.modules])\n"
    )
    assert out.split("\n")[:2] == ["[]", "[]"], out


def test_every_public_name_resolves_and_the_lazy_names_are_typed():
    """Every name of ``spectheory.__all__`` resolves (the lazy ones on first use), and the
    ``TYPE_CHECKING`` imports of ``spectheory/__init__.py`` list exactly the lazy names, so type
    checkers see what users get."""
    import ast

    import spectheory as st

    for name in st.__all__:
        assert getattr(st, name) is not None, name
    tree = ast.parse(Path(st.__file__).read_text())
    typed = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for imp in node.body
        if isinstance(imp, ast.ImportFrom)
        for alias in imp.names
    }
    assert typed == set(st._LAZY)
    assert st.trees.DraftTree is not None  # subpackages load on attribute access
    with pytest.raises(AttributeError):
        st.no_such_name  # noqa: B018


def test_numpy_fits_run_without_torch():
    """The fits that need only numpy -- the shipped byte n-gram as a Markov chain and the
    order-k chain fitted to sampled paths -- import and run with torch blocked; the n-gram
    chain agrees with its own counts and the fitted chain is a valid DecodingChain."""
    code = "import sys\nsys.modules['torch'] = None\n" + (
        "import numpy as np\n"
        "from spectheory.chain.ngram import NGramChain, load_shipped_ngram\n"
        "from spectheory.abstraction import fit_order_k_chain, ContextTree, fit_abstraction\n"
        "from spectheory.abstraction.certified import coarsen\n"
        "ngram = load_shipped_ngram('draft-ngram')\n"
        "K = ngram.kernel()\n"
        "assert K.shape == (256, 256) and np.allclose(K.sum(1), 1.0)\n"
        "c = ngram.counts()[ord('a')]\n"
        "assert np.isclose(K[ord('a'), ord('b')], (c[ord('b')] + ngram.alpha) / (c.sum() + 256 * ngram.alpha))\n"
        "toy = NGramChain.from_bytes(np.frombuffer(b'abcabcabd', np.uint8), order=3, alpha=1.0, vocab_size=256)\n"
        "s = toy.state_index(b'ab')\n"
        "assert toy.counts()[s, ord('c')] == 2 and toy.counts()[s, ord('d')] == 1\n"
        "assert toy.next_state()[s, ord('c')] == toy.state_index(b'bc')\n"
        "rng = np.random.default_rng(0)\n"
        "V, N, L, T = 3, 40, 2, 5\n"
        "paths = rng.integers(0, V, size=(N, L + T))\n"
        "laws = rng.dirichlet(np.ones(V), size=(N, T))\n"
        "chain = fit_order_k_chain(1, paths, laws, paths, laws, L, paths[:, :L], vocab_size=V)\n"
        "assert np.allclose(chain.target.sum(-1), 1.0) and chain.expected_tokens_per_call(6, 2) >= 1\n"
        "assert 'torch' not in sys.modules or sys.modules['torch'] is None\n"
    )
    _fresh(code)


PACKAGE_DIR = Path(__file__).resolve().parent.parent / "spectheory"
PACKAGES = sorted(["spectheory"] + [f"spectheory.{p.parent.name}" for p in PACKAGE_DIR.glob("*/__init__.py")])
TORCH_ONLY = ("spectheory.decoder", "spectheory.validation", "spectheory.tuning")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_has_a_curated_all(package):
    """Every public package lists its public names in ``__all__`` (no duplicates), each of them
    resolves, and no module of the library uses a star import."""
    import importlib

    module = importlib.import_module(package)
    names = module.__all__
    assert isinstance(names, list) and names, package
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    have_torch = importlib.util.find_spec("torch") is not None
    if package in TORCH_ONLY and not have_torch:
        return
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_no_star_imports():
    import ast

    stars = [
        f"{path.relative_to(PACKAGE_DIR)}:{node.lineno}"
        for path in PACKAGE_DIR.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
    ]
    assert not stars, stars


def test_decoder_entry_points_are_reachable_from_the_package():
    import spectheory.decoder as decoder

    for name in ("tree_generate", "medusa_generate", "load_heads", "speculative_generate", "load_model"):
        assert name in decoder.__all__
