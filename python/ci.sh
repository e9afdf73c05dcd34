#!/usr/bin/env bash
# The Python package's checks (run by .ci/run): in a fresh virtual environment, build the wheel,
# install it as a user would, and run
#   * the package's doctests and tests (tests/: brute force, embreex on random meshes, bad input,
#     pickling and a batch split over two Dask worker processes);
#   * the shared scenes' ray sets against Embree's hits (tests_shared/, needs SLABTREE_SCENES);
#   * trimesh's own ray tests (test_ray.py, test_ray_upstream.py from trimesh's source
#     distribution) with slabtree's intersector in place of trimesh's (tests/trimesh_suite/);
#   * the README's Python section, as written.
# Also fmt and clippy of the binding crate, which is its own workspace.
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
root=$(cd .. && pwd)
work=$root/target/python
rm -rf "$work"
mkdir -p "$work"

if ! python3 -m venv "$work/venv" 2>/dev/null; then
  apt-get update -qq && apt-get install -y -qq python3-venv python3-pip >/dev/null
  python3 -m venv "$work/venv"
fi
py=$work/venv/bin/python
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q "maturin>=1.5,<2" numpy pytest trimesh embreex manifold3d "dask[distributed]"

echo "--- fmt and clippy (python/)"
cargo fmt --check
PYO3_PYTHON=$py cargo clippy --all-targets -- -D warnings

echo "--- build the wheel and install it"
# As a wheel for other machines is built: no target-cpu (RUSTFLAGS overrides the repository's
# target-cpu=native); the kernels pick the CPU's SIMD level at run time.
RUSTFLAGS="-C target-cpu=x86-64" "$work/venv/bin/maturin" build --release --quiet --interpreter "$py" \
  --out "$work/wheels"
"$py" -m pip install -q "$work"/wheels/slabtree-*.whl

# From outside python/, so that `import slabtree` is the installed wheel, not the source folder.
cd "$work"
echo "--- doctests and tests"
"$py" -m pytest -q -p no:cacheprovider --doctest-modules --pyargs slabtree
"$py" -m pytest -q -p no:cacheprovider "$here/tests"
echo "--- the tests again at the lowest SIMD level (SLABTREE_SIMD=sse2)"
SLABTREE_SIMD=sse2 "$py" -m pytest -q -p no:cacheprovider "$here/tests"

echo "--- the shared scenes against Embree's hits (${SLABTREE_SCENES:-unset})"
"$py" -m pytest -q -p no:cacheprovider "$here/tests_shared"

echo "--- trimesh's own ray tests, with slabtree's intersector"
version=$("$py" -c 'import trimesh; print(trimesh.__version__)')
"$py" -m pip download -q --no-deps --no-binary :all: "trimesh==$version" -d "$work/sdist"
tar xzf "$work"/sdist/trimesh-*.tar.gz -C "$work/sdist"
mkdir -p "$work/trimesh_suite"
cp "$work"/sdist/trimesh-*/tests/test_ray.py "$work"/sdist/trimesh-*/tests/test_ray_upstream.py "$work/trimesh_suite/"
cp "$here"/tests/trimesh_suite/*.py "$work/trimesh_suite/"
"$py" -m pytest -q -p no:cacheprovider -rs "$work/trimesh_suite"

echo "--- the README's Python section, as written"
# From a file, not stdin, and behind a main guard: the Dask block's worker processes are spawned,
# and a spawned process imports the parent's main script by its path (without running the guard).
cat > "$work/readme_python.py" <<'PY'
import re, sys

if __name__ == "__main__":
    text = open(sys.argv[1]).read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's Python section"
    scope = {}  # the blocks continue one another, as in one session
    for block in blocks:
        exec(compile(block, "README.md (Python section)", "exec"), scope)
    print(f"{len(blocks)} block(s) ran")
PY
"$py" "$work/readme_python.py" "$root/README.md"
