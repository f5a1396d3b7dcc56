"""The pytest plugin: an engine's three-line test file runs the kit through pytest (in a
subprocess), passes the reference samplers and fails a buggy one with the kit's verdict; the
plugin only registers options, a marker and a fixture."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import spectheory._pytest_plugin as hooks
from spectheory.testing import reference_verify
from spectheory.testing.gallery import GALLERY
from spectheory.testing.pytest_plugin import KitCheck, kit_kind, parametrize_with_checks

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "testing_kit.md").read_text()
PLUGIN = "spectheory._pytest_plugin"


def doc_file(name):
    """The docs' example test file ``name`` (a python block opening with ``# name``)."""
    for block in re.findall(r"```python\n(.*?)```", DOC, re.S):
        if block.startswith(f"# {name}\n"):
            return block
    raise AssertionError(f"docs/testing_kit.md has no example {name}")


def run_pytest(tmp_path, files, *args):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            "-q",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_vllm_style_example_passes_the_reference_and_fails_the_bug_with_the_verdict(tmp_path):
    code, out = run_pytest(
        tmp_path, {"test_engine_vllm.py": doc_file("test_engine_vllm.py")}, "--spectheory-seed", "3"
    )
    assert code == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "FAILED test_engine_vllm.py::test_spec[dropped_draft_probs-verifier]" in out
    assert "AssertionError: spectheory kit: dropped_draft_probs (verifier, check_verifier) fails" in out
    assert "at 2000 samples per instance, seed 3" in out  # the options reach the kit
    assert "[FAIL] acceptance_rate" in out and "[FAIL] mean_accepted" in out


@pytest.mark.slow
def test_the_hf_style_example_passes_the_reference_and_fails_the_gallery_bug(tmp_path):
    code, out = run_pytest(
        tmp_path, {"test_engine_hf.py": doc_file("test_engine_hf.py")}, "--spectheory-samples", "200"
    )
    assert code == 1 and "1 failed, 1 passed" in out, out
    assert "spectheory kit: stale_context_round (sampler, check_sampler) fails zero_probability" in out
    assert "minimal failing instance" in out and "at 200 samples per instance, seed 0" in out


def test_options_marker_and_fixture_and_nothing_else(tmp_path):
    files = {
        "test_plain.py": "def test_one():\n    assert 1 + 1 == 2\n",
        "test_options.py": (
            "import pytest\n\n"
            "def test_default(spectheory_options):\n"
            "    assert (spectheory_options.samples, spectheory_options.seed) == (77, 0)\n\n"
            "@pytest.mark.spectheory(samples=5, seed=9)\n"
            "def test_marked(spectheory_options):\n"
            "    assert (spectheory_options.samples, spectheory_options.seed) == (77, 9)\n"
        ),
    }
    code, out = run_pytest(tmp_path, files, "--spectheory-samples", "77")
    assert code == 0 and "3 passed" in out, out
    code, out = run_pytest(tmp_path, {}, "--spectheory-samples", "0", "test_plain.py")  # checked when used
    assert code == 0, out
    code, out = run_pytest(tmp_path, {}, "--help")
    assert "--spectheory-samples=N" in out and "--spectheory-seed=SEED" in out
    # the module registers hooks that change nothing but options and markers
    hook_names = {n for n in dir(hooks) if n.startswith("pytest_")}
    assert hook_names == {"pytest_addoption", "pytest_configure", "pytest_unconfigure"}
    assert "spectheory.testing" not in (ROOT / "spectheory" / "_pytest_plugin.py").read_text().split('"""')[2]


def test_the_entry_point_is_declared_and_named_after_its_module():
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.entry-points.pytest11]\n", 1)[1].split("\n[", 1)[0]
    assert [ln for ln in section.splitlines() if ln.strip()] == [f'"{PLUGIN}" = "{PLUGIN}"']


def test_kinds_are_read_from_the_sampler():
    from spectheory.testing.gallery_samplers import make_sampler

    assert kit_kind(reference_verify) == "verifier" and kit_kind("block") == "verifier"
    assert kit_kind("tree_rrs") == "tree_verifier"
    assert kit_kind(make_sampler()) == "sampler"
    assert (
        kit_kind(lambda target_logits, draft_logits, draft_tokens, lengths, temperatures, rng: 0) == "ragged"
    )
    with pytest.raises(ValueError, match="kit_kind"):
        kit_kind(type("S", (), {"kit_kind": "magic", "__call__": lambda self: 0})())
    with pytest.raises(ValueError, match="callable"):
        kit_kind(3)


def test_a_failing_check_raises_the_verdict_and_a_passing_one_returns_the_report():
    bad = GALLERY["residual_not_normalised"][0]
    mark = parametrize_with_checks([reference_verify, pytest.param(bad, id="unnormalised")], samples=300)
    (ok, ok_check), (b, b_check) = (p.values for p in mark.args[1])
    assert [p.id for p in mark.args[1]] == ["reference_verify-verifier", "unnormalised"]
    assert ok_check(ok).passed
    with pytest.raises(AssertionError) as err:
        b_check(b)
    msg = str(err.value)
    assert msg.startswith("spectheory kit: ") and "at 300 samples per instance, seed 0" in msg
    assert "[FAIL]" in msg and "minimal failing instance" in msg and "[PASS]" not in msg
    with pytest.raises(ValueError, match="samples"):
        parametrize_with_checks([reference_verify], samples=0)
    with pytest.raises(ValueError, match="kind"):
        KitCheck("magic")
    with pytest.raises(ValueError, match="at least one"):
        parametrize_with_checks([])


def test_installed_through_the_entry_point_it_loads_alone_and_minus_p_on_top_is_harmless(tmp_path):
    # a distribution declaring the entry point as pyproject.toml does (this environment's
    # install may predate it): pytest loads the plugin from it, without -p
    site = tmp_path / "site"
    info = site / "spectheory_plugin_probe-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spectheory-plugin-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{PLUGIN} = {PLUGIN}\n")
    (tmp_path / "test_opts.py").write_text(
        "def test_opts(spectheory_options):\n    assert spectheory_options.samples == 33\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    for extra in ([], ["-p", PLUGIN]):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *extra,
                "--spectheory-samples",
                "33",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_kit_on_the_hf_reference_takes_under_a_minute_of_cpu():
    torch = pytest.importorskip("torch")
    from spectheory.testing.hf_models import from_hf_sampler, hf_style_round

    check, threads = KitCheck("sampler"), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.process_time()
        report = check(from_hf_sampler(hf_style_round))
        cpu = time.process_time() - start
    finally:
        torch.set_num_threads(threads)
    assert report.passed and report.config["n_samples"] == check.options().samples
    assert cpu < 60, f"{cpu:.1f} CPU s at {check.options().samples} samples per instance"
