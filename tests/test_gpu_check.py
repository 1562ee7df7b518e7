"""``make gpu-check`` (bench/gpu_check.py) run on this CPU machine: without a GPU it
lowers for CUDA and skips the GPU part with a message; with ``--platform cpu`` its GPU
part (every check, the demo, the benchmark, the serving bench) runs on the host devices,
so the script cannot rot between the times it meets a GPU. Slow (a minute): ``make
soak`` runs it."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.soak


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k != "NXPY_PLATFORM"}
    p = subprocess.run([sys.executable, "-m", "bench.gpu_check", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout + p.stderr


def test_without_a_gpu_it_lowers_for_cuda_and_skips_the_gpu_part():
    rc, out = _run()
    assert rc == 0, out
    assert "ok   lowering" in out
    assert "part 2: skipped: no CUDA GPU here" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("gpu-check: lowering ok; no GPU, GPU part skipped")


def test_the_gpu_part_runs_on_the_host_devices():
    rc, out = _run("--platform", "cpu", "--small")
    assert rc == 0, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("gpu-check: cpu (8 x host CPU)"), last
    assert " 9/9 checks passed" in last, out
    for name in ("matmul_f32", "matmul_bf16", "mlp_step", "conv", "attention"):
        assert f"{name} " in last
    assert "| Serving, batch_size=64 |" in out  # bench/serving's table
    assert "serving: batch_size=64 serves " in last, last
    assert "FAIL" not in out
