#!/bin/bash
# speculative decoding side by side: the same ingest (conv-30 sessions 1-2) on llama-server without, with a 0.5B draft, with n-gram lookup
BIN=/root/.local/share/graphmem/llama.cpp/1e866261e0de8c15/bin/llama-server
M15=/root/.local/share/graphmem/cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
M05=/work/spec/cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
BASE="--model $M15 --alias qwen2.5-coder-1.5b-instruct-q4_k_m --host 127.0.0.1 --port 8031 --ctx-size 16384 --parallel 4 --no-kv-unified --cont-batching --threads 2 --threads-batch 2 --jinja --cache-prompt --cache-reuse 256 --cache-ram 1024 --slot-prompt-similarity 0.1 --metrics --slots --no-webui"
cd /work/main
run() {
  name=$1; shift
  $BIN $BASE "$@" > /work/spec/server-$name.log 2>&1 &
  pid=$!
  for i in $(seq 1 120); do curl -sf http://127.0.0.1:8031/health >/dev/null && break; sleep 1; done
  t0=$(date +%s.%N)
  GRAPHMEM_HOME=/work/spec NEO4J_URI=bolt://127.0.0.1:7697 GRAPHMEM_LOCAL_LLM_PORT=8031 .venv/bin/graphmem eval locomo --data /work/shared/data/locomo/locomo-dev.json -c conv-30 -s 1,2 --ingest-only --tag spec-$name-$RANDOM --out /work/spec/out-$name --json > /work/spec/ingest-$name.json 2> /work/spec/ingest-$name.err
  t1=$(date +%s.%N)
  echo "$name $(echo "$t1 - $t0" | bc)" >> /work/spec/times.txt
  curl -s http://127.0.0.1:8031/metrics | grep -E "^llamacpp:(tokens_predicted_total|prompt_tokens_total|n_decode_total)" | sed "s/^/$name /" >> /work/spec/times.txt
  kill $pid; wait $pid 2>/dev/null
}
rm -f /work/spec/times.txt
run none
run draft --spec-type draft-simple --model-draft $M05 --spec-draft-n-max 8 --threads-draft 2 --threads-batch-draft 2
run ngram --spec-type ngram-simple
run none2
