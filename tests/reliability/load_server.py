"""The REST server the load test runs in a subprocess: the real app, MiniLM embeddings, a scripted LLM.

    python -m tests.reliability.load_server --port 8765

Settings come from the environment (NEO4J_*, GRAPHMEM_API_KEYS, ...), as for ``graphmem serve``.
Run from the repository root (``tests`` must be importable).
"""

from __future__ import annotations

import argparse

from graphmem.config import load_settings
from graphmem.interfaces.rest.server import serve
from tests.reliability.support import scripted_app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    settings = load_settings()
    app = scripted_app(settings)  # embedder None: MiniLM from settings, as in production
    serve(app, settings, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)  # as `graphmem serve`


if __name__ == "__main__":
    main()
