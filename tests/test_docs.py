"""The documentation site: an API page for every public name, a gallery page for every figure.

The fast tests check what the two extensions of ``docs/_ext`` generate (no Sphinx run); the slow
one builds the whole site as CI does (``-W --keep-going -n``: warnings are errors, every
cross-reference resolves) and reads the HTML.
"""

import html
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spectheory

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

pytest.importorskip("sphinx")
api = importlib.import_module("spectheory_api")
gallery = importlib.import_module("spectheory_gallery")


@pytest.fixture(scope="module")
def reference():
    return api.Reference()


def test_every_public_name_has_one_documented_home(reference):
    for pkg, names in reference.exports.items():
        for name in names:
            obj = getattr(reference.packages[pkg], name)
            home = reference.documented(obj, name)
            assert home is not None, f"{pkg}.{name} has no page"
            assert home in reference.home, f"{pkg}.{name} -> {home}, which is not a page"
            assert getattr(reference.packages[reference.home[home][0]], name) is obj


def test_top_level_names_are_the_package_list(reference):
    assert reference.exports["spectheory"] == api.public_names(spectheory)
    assert {"DecodingChain", "simulate", "acceptance_rate"} <= set(reference.exports["spectheory"])
    # documented once, under the most specific package: the chain room's DecodingChain
    assert reference.documented(spectheory.DecodingChain, "DecodingChain") == "spectheory.chain.DecodingChain"


def test_public_name_fallback_without_all():
    import types

    pkg = types.ModuleType("spectheory.fake")
    pkg.f = lambda: None
    pkg.f.__module__ = "spectheory.fake.mod"
    pkg._private = 1
    pkg.np = importlib.import_module("numpy")
    assert api.public_names(pkg) == ["f"]
    pkg.__all__ = ["f", "g"]
    assert api.public_names(pkg) == ["f", "g"]


def test_class_pages_list_project_methods_not_library_ones(reference):
    members = api.class_members(spectheory.DecodingChain)
    assert "protocol" in members  # from a project mixin
    torch = pytest.importorskip("torch")
    from spectheory.decoder.model import GPT

    members = set(api.class_members(GPT))
    assert {"forward", "new_cache"} <= members  # GPT's own (forward overrides torch's)
    assert not {"to", "state_dict", "parameters", "train"} & members  # torch's own
    assert "to" in vars(torch.nn.Module)


def test_gallery_has_a_page_per_figure_script():
    scripts = gallery.scripts()
    assert {p.stem for p in scripts} == {p.stem for p in (ROOT / "figures").glob("fig*.py")}
    assert [p.stem for p in scripts][:3] == ["fig1_theorem1", "fig2_batch", "fig3_pareto"]
    for path in scripts:
        assert path.with_suffix(".png").exists(), f"{path.name} has no committed PNG"
        caption = gallery.caption(path)
        assert caption and not any(p.startswith("Usage:") for p in caption)
        number = re.match(r"fig(\d+)", path.stem).group(1)
        assert gallery.title(path).startswith(f"Figure {number}: ")


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors(tmp_path):
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]
    cmd += ["-d", str(tmp_path / "doctrees"), str(DOCS), str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-5000:]

    top = (out / "api" / "generated" / "spectheory.html").read_text()
    for name in api.public_names(spectheory):
        link = re.search(rf'href="([^"#]+)#[^"]*"[^>]*>(?:<[^>]+>)*{re.escape(name)}\b', top)
        assert link, f"spectheory.{name} is not linked from the API page of spectheory"
        assert (out / "api" / "generated" / link.group(1)).exists(), link.group(1)

    for path in gallery.scripts():
        page = html.unescape((out / "gallery" / "generated" / f"{path.stem}.html").read_text())
        assert f"{path.stem}.png" in page
        for word in re.findall(r"[A-Za-z]{4,}", " ".join(gallery.caption(path)))[:12]:
            assert word in page, f"the caption of {path.name} is not on its page ({word})"
    assert (out / "_images" / "fig1_theorem1.png").exists()
