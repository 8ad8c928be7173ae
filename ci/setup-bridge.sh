#!/usr/bin/env bash
# Sets up the Python side of navkit's simulator bridge (docs/BRIDGE.md):
# headless OpenGL from Debian, a venv at .venv with MiniWorld, Pillow and
# numpy, then checks that MiniWorld imports headless and runs the
# navkit_bridge unit tests. Idempotent; safe to rerun.
#
# Afterwards:  NAVKIT_PYTHON=$PWD/.venv/bin/python NAVKIT_REQUIRE_MINIWORLD=1 \
#              cargo test -p nav-hal --all-features
set -euo pipefail
cd "$(dirname "$0")/.."

# MiniWorld renders through pyglet's headless (EGL) mode with Mesa's
# software rasteriser (llvmpipe) and calls GLU: libEGL + Mesa's EGL vendor
# library, libGL, the DRI drivers and libGLU.
have_lib() { ldconfig -p | grep -q "$1"; }
if ! have_lib 'libEGL.so.1' || ! have_lib 'libEGL_mesa.so.0' || ! have_lib 'libGL.so.1' \
    || ! have_lib 'libGLU.so.1' || ! ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1; then
    echo "installing headless OpenGL (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libglu1-mesa >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "miniworld==2.1.0" "pillow>=10" "numpy>=1.24"

.venv/bin/python -c "import pyglet; pyglet.options['headless'] = True; import miniworld; print('miniworld', miniworld.__version__ if hasattr(miniworld, '__version__') else '', 'imports headless')"
PYTHONPATH=nav-hal/bridge .venv/bin/python -m navkit_bridge --backend miniworld --check
(cd nav-hal/bridge && ../../.venv/bin/python -m unittest discover -s tests -t . 2>&1 | tail -n 3)
