#!/usr/bin/env bash
# The README's first command: install (idempotent; seconds the second time), start the local
# Neo4j (jars fetched once with Maven), then run the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install.sh
.venv/bin/graphmem neo4j start
if .venv/bin/graphmem demo --help >/dev/null 2>&1; then
  .venv/bin/graphmem demo
else
  echo "Neo4j is up; open the Browser URL above. (\`graphmem demo\` is not there yet.)"
fi
