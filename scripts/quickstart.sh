#!/usr/bin/env bash
# The README's first command: install (idempotent; seconds the second time), start the local
# Neo4j (jars fetched once with Maven), then run the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install.sh --demo-model
.venv/bin/graphmem neo4j start
.venv/bin/graphmem demo "$@"
