#!/usr/bin/env bash
# Install everything Loom's tests need on a fresh Debian machine: headless GL (Mesa llvmpipe via
# EGL, for the moderngl renderer and screenshot tests), Xvfb, then Loom with its test extra and
# the example plugin package.
# Safe to run again: apt and pip skip what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
# the Python that pip installs into: the active virtual environment's (README, Set-up), 3.11 or newer
if ! python -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    found=$( (command -v python >/dev/null && python --version 2>&1) || echo "no python on PATH")
    echo "scripts/install.sh: Loom needs Python 3.11 or newer as \`python\`; found: $found." \
         "Make and activate a virtual environment with one (README.md, Set-up), then run this again." >&2
    exit 1
fi
apt_packages=(libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri xvfb xauth)
if command -v apt-get >/dev/null 2>&1; then
    missing=()
    for p in "${apt_packages[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
fi
python -m pip install -q --disable-pip-version-check -e ".[test]"
# the worked plugin package: the test suite checks that App(plugins="auto") discovers it
python -m pip install -q --disable-pip-version-check --no-deps -e examples/loom_vortex
# bytecode for every module (a launch then skips compiling Python source, even where PYTHONDONTWRITEBYTECODE is
# set) and numba's cache for every game and cloth model: the demo and the test suite start warm
python -m compileall -q -j 0 engine launch systems components games prefabs files benchmarks __init__.py >/dev/null
python -m loom.games --precompile
