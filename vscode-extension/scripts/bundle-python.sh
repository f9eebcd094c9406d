#!/usr/bin/env bash
# Builds the repository's wheel and installs it with its dependencies into
# bundled/libs/py3XX (pip install --target), once per supported CPython version, so the .vsix
# runs its language server with a plain python3 and no pip step on the user's machine.
#
# DENPEX_BUNDLE_PYTHONS   versions to bundle (default "3.10 3.11 3.12 3.13")
# DENPEX_BUNDLE_PLATFORM  pip platform tags (default manylinux x86_64); the .vsix is then for that platform
# PYTHON                  the interpreter that runs pip (default python3)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/.." && pwd)
py=${PYTHON:-python3}
versions=${DENPEX_BUNDLE_PYTHONS:-"3.10 3.11 3.12 3.13"}
platforms=${DENPEX_BUNDLE_PLATFORM:-"manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64"}

build=$here/build/python
rm -rf "$build" "$here/bundled/libs"
mkdir -p "$build/wheel" "$here/bundled/libs"

echo "bundle-python: building the denpex wheel from $repo"
# a pure wheel: one bundle serves every CPython version, so no compiled native key search (the
# crate's passes give the same answers; the native search matters for gigabyte logs, not editors)
DENPEX_NO_NATIVE=1 "$py" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$build/wheel" "$repo"
wheel=$(ls "$build/wheel"/denpex-*.whl)

plat_args=()
for p in $platforms; do plat_args+=(--platform "$p"); done

for v in $versions; do
  tag=${v/./}
  target=$here/bundled/libs/py$tag
  echo "bundle-python: installing into bundled/libs/py$tag (CPython $v)"
  "$py" -m pip install --quiet --disable-pip-version-check --no-compile \
    --target "$target" --python-version "$v" --implementation cp --only-binary=:all: \
    "${plat_args[@]}" "$wheel"
  # console scripts are useless inside the extension (their shebang names the build machine's python)
  rm -rf "$target/bin"
done

# Smoke test: the bundled server imports and answers --version under the build machine's python
# when its version was bundled.
host=$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
if [ -d "$here/bundled/libs/py$host" ]; then
  "$py" -I -B "$here/bundled/tool/denpex_server.py" --version
fi
du -sh "$here/bundled/libs" | sed 's/^/bundle-python: total /'
