"""The repository stands alone: no code, test, example, benchmark or build file reads a
path outside it. (`.ci/run` proves it by running everything from a fresh clone in an
empty directory; this test names the offending line before CI gets there.)"""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# spelled in pieces so that this file does not match itself
OUTSIDE = re.compile("|".join([
    r"\.\./" + "shared",                       # the sibling reading-material folder
    "shared/" + r"(conformance|reference|notes)",
    "/" + r"work/",                            # absolute paths of the build machines
    r"parents\[[2-9]\]",                       # climbing out of tests/ or nxpy/
]))
CHECKED = ("nxpy/", "tests/", "examples/", "bench/", ".ci/", "Makefile", "pyproject.toml")


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        files = [ROOT / f for f in out]
    except (OSError, subprocess.CalledProcessError):  # an export without .git
        files = [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    return [p for p in files if str(p.relative_to(ROOT)).startswith(CHECKED)]


def test_no_path_outside_the_repository():
    hits = []
    for path in tracked_files():
        if path.suffix == ".json" or not path.is_file():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "paths outside the repository:\n" + "\n".join(hits)


def test_the_data_the_tests_read_is_in_the_repository():
    data = ROOT / "tests" / "data"
    for name in ("collectives_2x2.json", "nx_sharding_cases.json"):
        assert (data / name).is_file(), name
    assert (data / "README.md").is_file()
