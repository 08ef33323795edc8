"""Sustained mixed load over loopback REST: several clients adding and searching against a uvicorn
subprocess (the real app, MiniLM embeddings, a scripted LLM). No request may fail; the server's RSS
may grow by less than a stated bound after warm-up; p50/p95 latencies go to a JSON file.

CI form: 15 s, 3 clients. Full form (GRAPHMEM_FULL=1): 3 minutes, 6 clients.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem.config import Settings
from tests.reliability.support import free_port, percentile, record, rss_bytes, server_env

KEY = "load-key-0123456789abcdef-xyz"
ROOT = Path(__file__).resolve().parents[2]
SIZES = [
    pytest.param({"seconds": 15, "clients": 3, "warmup": 5, "rss_bound_mb": 64}, id="ci"),
    pytest.param({"seconds": 180, "clients": 6, "warmup": 20, "rss_bound_mb": 64}, id="full", marks=pytest.mark.slow),
]
WORDS = [
    "alice",
    "bob",
    "lisbon",
    "tea",
    "coffee",
    "project",
    "deadline",
    "friday",
    "bicycle",
    "repair",
    "nurse",
    "sister",
    "vault",
    "garden",
    "piano",
    "train",
    "paris",
    "meeting",
    "budget",
    "report",
    "holiday",
    "recipe",
    "soup",
    "marathon",
    "doctor",
]


@pytest.mark.parametrize("size", SIZES)
def test_sustained_mixed_load(size: dict[str, Any], settings: Settings, neo4j_driver: Any, tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.load_server", "--port", str(port)],
        cwd=ROOT,
        env=server_env(settings, KEY, ROOT),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    users = [f"rel-load-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    lat: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    rss: list[tuple[float, int]] = []
    try:
        deadline = time.monotonic() + 120
        while True:  # wait for the server (MiniLM and the driver load at start-up)
            try:
                if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
            time.sleep(0.5)

        stop = threading.Event()
        lock = threading.Lock()

        def client(n: int) -> None:
            rng = random.Random(n)
            user = users[n % len(users)]
            with httpx.Client(base_url=base, headers={"X-API-Key": KEY, "X-User-Id": user}, timeout=60) as c:
                while not stop.is_set():
                    op = "add" if rng.random() < 0.3 else "search"
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
                    t0 = time.perf_counter()
                    try:
                        if op == "add":
                            r = c.post(
                                "/v1/notes", json={"content": f"{text.capitalize()}.", "enrich": rng.random() < 0.5}
                            )
                            ok = r.status_code == 201
                        else:
                            r = c.post(
                                "/v1/search",
                                json={"query": text, "k": 5, "mode": rng.choice(["vector", "links", "hybrid"])},
                            )
                            ok = r.status_code == 200
                        if not ok:
                            raise RuntimeError(f"{op}: HTTP {r.status_code}: {r.text[:200]}")
                    except Exception as exc:
                        with lock:
                            errors.append(f"{type(exc).__name__}: {exc}")
                        continue
                    with lock:
                        lat[op].append(time.perf_counter() - t0)

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(size["clients"])]
        t_start = time.monotonic()
        for t in threads:
            t.start()
        while time.monotonic() - t_start < size["seconds"]:
            rss.append((time.monotonic() - t_start, rss_bytes(server.pid)))
            time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=90)
        rss.append((time.monotonic() - t_start, rss_bytes(server.pid)))
        elapsed = time.monotonic() - t_start
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        neo4j_driver.execute_query(
            "MATCH (n) WHERE (n:Note OR n:NoteVersion) AND n.user_id IN $users DETACH DELETE n",
            {"users": users},
            database_=settings.neo4j_database,
        )

    after_warmup = [r for t, r in rss if t >= size["warmup"]] or [rss[-1][1]]
    growth_mb = (rss[-1][1] - after_warmup[0]) / 2**20
    ops = {k: len(v) for k, v in lat.items()}
    stats = {
        op: {
            "count": len(v),
            "p50_ms": round(percentile(v, 50) * 1000, 1),
            "p95_ms": round(percentile(v, 95) * 1000, 1),
            "max_ms": round(max(v) * 1000, 1),
        }
        for op, v in lat.items()
    }
    total = sum(ops.values())
    record(
        f"load-{'full' if size['seconds'] > 60 else 'ci'}",
        {
            "seconds": round(elapsed, 1),
            "clients": size["clients"],
            "requests": total,
            "errors": len(errors),
            "throughput_rps": round(total / elapsed, 1),
            "latency": stats,
            "rss_mb_start": round(rss[0][1] / 2**20, 1),
            "rss_mb_after_warmup": round(after_warmup[0] / 2**20, 1),
            "rss_mb_end": round(rss[-1][1] / 2**20, 1),
            "rss_growth_mb": round(growth_mb, 1),
            "rss_bound_mb": size["rss_bound_mb"],
            "rss_samples": [(round(t, 1), round(r / 2**20, 1)) for t, r in rss],
            "table": {
                "scenario": f"sustained load over REST ({size['clients']} clients, {elapsed:.0f} s)",
                "injected": "30% adds (half enriched: scripted LLM, MiniLM embeddings), 70% searches (3 modes)",
                "operations": f"{total} requests ({ops.get('add', 0)} adds, {ops.get('search', 0)} searches), "
                f"{total / elapsed:.1f} req/s",
                "lost": f"{len(errors)} errors",
                "notes": "; ".join(
                    f"{op} p50 {s['p50_ms']:.0f} ms / p95 {s['p95_ms']:.0f} ms" for op, s in stats.items()
                )
                + f"; server RSS +{growth_mb:.0f} MiB after warm-up (bound {size['rss_bound_mb']})",
            },
        },
    )
    assert errors == [], errors[:5]
    assert ops.get("add", 0) > 0 and ops.get("search", 0) > 0
    assert growth_mb < size["rss_bound_mb"], rss
