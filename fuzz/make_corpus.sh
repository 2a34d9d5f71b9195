#!/usr/bin/env bash
# Regenerates the seed corpora of fuzz/corpus/ from the test data: make_corpus.py for the seeds
# derived from tests/data, the fuzz build's seed writer for manifests, segments and safetensors
# files written by the real writers, protoc for serialized GenerateRequests. Needs build-fuzz
# (tools/fuzz.sh build). Overwrites the seeds of the same names, keeps any others.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=fuzz/corpus
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
mkdir -p "$CORPUS"/{safetensors,sharded_index,config_json,tokenizer_json,slow_tokenizer,chat_template,jinja_template,manifest,segment,request_validation,tool_calls,http_request,hole_template}
python3 fuzz/make_corpus.py "$CORPUS"
cp tests/data/chat_templates/*.jinja "$CORPUS/jinja_template/"  # the published chat templates
"$BUILD_DIR/fuzz/fuzz_seed_writer" "$CORPUS"

encode() {  # name, text-format GenerateRequest
  printf '%s\n' "$2" | protoc --encode=unmask.v1.GenerateRequest -I proto unmask/v1/scheduler.proto \
    > "$CORPUS/request_validation/$1.pb"
}
encode text 'model: "tiny" text: "In the beginning" params { gen_length: 32 block_length: 8 steps: 32 temperature: 0.5 sampler: "dual_cache+threshold" threshold: 0.9 } priority: 3 deadline_seconds: 60 idempotency_key: "key-1"'
encode chat 'model: "tiny" chat { messages { role: "system" content: "Be brief." } messages { role: "user" content: "Hi" } messages { role: "assistant" content: "Hello" } messages { role: "user" content: "Bye" } } params { cfg_scale: 1.5 remasking: REMASKING_RANDOM factor: 2 attention_query_chunk: 64 early_stop: false }'
encode ids 'model: "tiny" ids { ids: [1, 2, 3, 126336] } params { seed: 7 stop_at_eos: true } partial_text: true'
encode bad-role 'model: "tiny" chat { messages { role: "tool" content: "x" } }'
encode tools 'model: "tiny" chat { messages { role: "user" content: "Weather?" } messages { role: "assistant" tool_calls { id: "c1" name: "get_weather" arguments: "{\"city\": \"Rome\"}" } } messages { role: "tool" content: "sunny" tool_call_id: "c1" } tools { name: "get_weather" description: "d" parameters: "{\"type\": \"object\"}" } tool_choice: "get_weather" single_tool_call: true }'
echo "fuzz/make_corpus.sh: $(find "$CORPUS" -type f | wc -l) seeds, $(du -sh "$CORPUS" | cut -f1)"
