"""An OpenAI-compatible chat server with a fixed latency per call, for the ingest benchmark.

It answers ``POST /v1/chat/completions`` after sleeping ``latency`` seconds, with a realistic JSON
reply built from the schema the request carries, whatever schema that is: a tool call for
``tools`` (function calling), JSON content for ``response_format`` json_schema, else short text.
Strings are taken from the note in the prompt (keywords, a context sentence), fields named like an
id get ids found in the prompt (``id_pattern``: the benchmark's note ids), so link decisions name
shown neighbours and some of them evolve one. ``usage`` counts tokens with graphmem's offline
WordPiece tokenizer (an estimate of what a real model would count: messages plus the schema).
``GET /stats`` reports the requests served and the most served at once (``?reset=1``: and starts
counting anew). ``GET /metrics`` answers as llama-server with ``--metrics`` does: a
``llamacpp:n_decode_total`` counter (one step per call served, and one per page while calls are in
flight), so the local model's client (``graphmem.llm.progress``) polls it as it polls the real server.

Run it as ``python -m graphmem.evaluation.llm_stub --latency 0.5``: it prints its base URL on the
first line of stdout, then serves until terminated. Threads, one per connection: the latency is a
sleep, so a few hundred calls can wait at once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from graphmem.tokens import count_tokens

DEFAULT_ID_PATTERN = r"\bbi-[0-9a-z]+-[0-9a-z]+-\d{5}\b"
_NOTE = re.compile(r"<note>(.*?)</note>", re.DOTALL)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = {"that", "this", "with", "from", "have", "were", "they", "their", "about", "after", "before", "into"}


class _Reply:
    """Values for one request, drawn from its prompt (deterministic per prompt)."""

    def __init__(self, messages: list[dict[str, Any]], id_pattern: re.Pattern[str]) -> None:
        texts = [m.get("content") for m in messages]
        self.prompt = "\n".join(t if isinstance(t, str) else json.dumps(t) for t in texts)
        # the note is in the user's part (a system prompt may name the <note> tags in its rules)
        user = "\n".join(str(m.get("content")) for m in messages if m.get("role") != "system")
        notes = _NOTE.findall(user)
        note = notes[0] if notes else user
        self.words = [w.lower() for w in _WORD.findall(note) if w.lower() not in _STOP] or ["memory"]
        seen: dict[str, None] = {}
        for found in id_pattern.findall(self.prompt):
            seen.setdefault(found)
        self.ids = list(seen)
        self.rng = random.Random(hashlib.sha256(self.prompt.encode("utf-8", "replace")).digest())
        self._next_id = 0

    def next_id(self) -> str:
        value = self.ids[self._next_id % len(self.ids)]
        self._next_id += 1
        return value

    def phrase(self, n: int) -> str:
        picked = self.words[:n] if len(self.words) >= n else self.words
        return " ".join(picked)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def fill(schema: dict[str, Any], defs: dict[str, Any], reply: _Reply, name: str = "") -> Any:
    """A value that validates against ``schema``, shaped like a model's answer."""
    schema = _resolve(schema, defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        concrete = [_resolve(o, defs) for o in options if _resolve(o, defs).get("type") != "null"]
        nullable = len(concrete) < len(options)
        if not concrete or (nullable and reply.rng.random() < 0.4):
            return None
        return fill(concrete[0], defs, reply, name)
    if "enum" in schema:
        return reply.rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props: dict[str, Any] = schema.get("properties", {})
        return {key: fill(sub, defs, reply, key) for key, sub in props.items()}
    if kind == "array":
        item = _resolve(schema.get("items", {}), defs)
        if item.get("type") == "object" or "properties" in item:
            wants_id = any(k.endswith("id") for k in item.get("properties", {}))
            if wants_id and not reply.ids:
                return []
            count = reply.rng.choice((0, 1, 1, 2)) if "update" in name else reply.rng.choice((1, 1, 2))
            return [fill(item, defs, reply, name) for _ in range(min(count, max(1, len(reply.ids))))]
        count = min(len(reply.words), reply.rng.randint(3, 5))
        return [fill(item, defs, reply, name) if item.get("type") != "string" else reply.words[i] for i in range(count)]
    if kind == "string":
        if name.endswith("id") and reply.ids:
            return reply.next_id()
        limit = int(schema.get("maxLength", 400))
        text = f"{name or 'text'} about {reply.phrase(4)}" if name != "context" else f"A note about {reply.phrase(6)}."
        return text[:limit]
    if kind in ("number", "integer"):
        low, high = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
        value = low + (high - low) * 0.7
        return int(value) if kind == "integer" else round(value, 2)
    if kind == "boolean":
        return True
    return None


def completion(body: dict[str, Any], id_pattern: re.Pattern[str]) -> tuple[dict[str, Any], str]:
    """The chat.completion answer to a request body, and the name of the schema it filled."""
    messages = body.get("messages") or []
    reply = _Reply(messages, id_pattern)
    tools = body.get("tools") or []
    fmt = body.get("response_format") or {}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    schema_name = "text"
    schema_text = ""
    if tools:
        choice = body.get("tool_choice")
        wanted = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        tool = next((t for t in tools if t.get("function", {}).get("name") == wanted), tools[0])["function"]
        params = tool.get("parameters", {})
        schema_name, schema_text = tool.get("name", "tool"), json.dumps(tool)
        args = fill(params, params.get("$defs", {}), reply)
        message["tool_calls"] = [
            {"id": f"call_{reply.rng.getrandbits(32):08x}", "type": "function",
             "function": {"name": schema_name, "arguments": json.dumps(args)}}
        ]  # fmt: skip
        out_text, finish = message["tool_calls"][0]["function"]["arguments"], "tool_calls"
    elif fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema", {})
        schema = spec.get("schema", {})
        schema_name, schema_text = spec.get("name", "json"), json.dumps(schema)
        out_text = json.dumps(fill(schema, schema.get("$defs", {}), reply))
        message["content"] = out_text
    else:
        out_text = f"The notes mention {reply.phrase(3)}."
        message["content"] = out_text
    prompt_tokens = count_tokens(reply.prompt) + count_tokens(schema_text) + 4 * len(messages)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count_tokens(out_text)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    answer = {
        "id": f"chatcmpl-stub-{reply.rng.getrandbits(48):012x}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
    return answer, schema_name


class StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, latency: float, id_pattern: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.latency = latency
        self.id_pattern = re.compile(id_pattern)
        self.lock = threading.Lock()
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.by_schema: dict[str, int] = {}
        self.decode_steps = 0  # the /metrics counter
        self.metric_polls = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections
    server: StubServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        srv = self.server
        path, _, query = self.path.partition("?")
        if path.rstrip("/").endswith("/stats"):
            with srv.lock:
                stats = {"served": srv.served, "max_in_flight": srv.max_in_flight, "by_schema": dict(srv.by_schema)}
                if "reset" in query:  # counters per benchmark level
                    srv.served, srv.max_in_flight, srv.by_schema = 0, srv.in_flight, {}
            self._send(200, stats)
        elif path.rstrip("/") == "/metrics":
            with srv.lock:
                srv.metric_polls += 1
                srv.decode_steps += 1 if srv.in_flight else 0
                steps = srv.decode_steps + srv.served
            data = f"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total {steps}\n".encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        srv = self.server
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        with srv.lock:
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            time.sleep(srv.latency)
            answer, schema = completion(body, srv.id_pattern)
        finally:
            with srv.lock:
                srv.in_flight -= 1
        with srv.lock:
            srv.served += 1
            srv.by_schema[schema] = srv.by_schema.get(schema, 0) + 1
        self._send(200, answer)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per call")
    parser.add_argument("--id-pattern", default=DEFAULT_ID_PATTERN, help="regex of the note ids in prompts")
    args = parser.parse_args(argv)
    server = StubServer(args.port, args.latency, args.id_pattern)
    print(server.base_url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
