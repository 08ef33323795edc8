#!/usr/bin/env bash
# The README's first command: install (idempotent; seconds the second time), start the local
# Neo4j (jars fetched once with Maven), then run the demo. On a new machine llama-server compiles
# in the background: the demo stores and searches its turns without the model meanwhile, then
# waits for the build and runs A-MEM with the model.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install.sh --demo-model --build-in-background
.venv/bin/graphmem neo4j start
.venv/bin/graphmem demo "$@"
