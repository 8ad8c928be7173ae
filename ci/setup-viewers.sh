#!/usr/bin/env bash
# Sets up the viewers' side of navkit's recording checks (docs/RECORDING.md):
# a venv at .venv-viewers with, pinned,
#   - `mcap` and `mcap-protobuf-support`: the official Python MCAP reader and
#     its Protobuf decoder, which decode every Protobuf channel of a recording
#     (ci/check_viewers.py mcap FILE);
#   - `rerun-sdk`: Rerun, which loads a recording and must turn the camera,
#     LiDAR, transforms and scene into its own typed archetypes
#     (ci/check_viewers.py rerun FILE);
#   - `foxglove-sdk` (the Foxglove SDK's Python package, whose Protobuf
#     schemas the recording's match) and `websockets`: a client of the
#     Foxglove WebSocket protocol that subscribes to `nav ... --live`
#     (ci/check_viewers.py live ADDR).
# Idempotent.
#
# Afterwards:  NAVKIT_VIEWERS_PYTHON=$PWD/.venv-viewers/bin/python NAVKIT_REQUIRE_VIEWERS=1 \
#              cargo test -p nav-cli --test cli_viewers
set -euo pipefail
cd "$(dirname "$0")/.."

FOXGLOVE=0.30.3
MCAP=1.6.0
MCAP_PROTOBUF=0.6.0
RERUN=0.41.0
WEBSOCKETS=17.4

PY=${PYTHON:-python3}
VENV=.venv-viewers
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip --disable-pip-version-check install --quiet \
    "foxglove-sdk==$FOXGLOVE" "mcap==$MCAP" "mcap-protobuf-support==$MCAP_PROTOBUF" \
    "rerun-sdk==$RERUN" "websockets==$WEBSOCKETS"
"$VENV/bin/python" -c "import mcap, mcap_protobuf, rerun, foxglove, websockets; print('viewers ok: rerun', rerun.__version__)"
