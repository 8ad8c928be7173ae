#!/usr/bin/env bash
# Sets up the official MCP Python SDK (`mcp` on PyPI, pinned) in .venv-mcp: the
# client that nav-cli/tests/mcp_python.rs drives `nav mcp` with (over stdio and
# Streamable HTTP). Idempotent.
#
# Afterwards:  NAVKIT_MCP_PYTHON=$PWD/.venv-mcp/bin/python NAVKIT_REQUIRE_MCP=1 \
#              cargo test -p nav-cli --test mcp_python
set -euo pipefail
cd "$(dirname "$0")/.."

MCP=2.3.0

PY=${PYTHON:-python3}
VENV=.venv-mcp
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip --disable-pip-version-check install --quiet "mcp==$MCP"
"$VENV/bin/python" -c "import mcp, importlib.metadata as m; print('mcp', m.version('mcp'))"
