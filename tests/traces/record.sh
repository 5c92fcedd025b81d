#!/usr/bin/env bash
# Re-records the traces in this directory with the real server and curl:
#   tests/traces/record.sh [BUILD_DIR [TRACE...]]   (BUILD_DIR defaults to ./build; TRACE: basic,
#   agent, wires; all of them by default)
# Each trace gets a fresh `anchorage --preset tiny --ctx-size 2048` on a free port, the requests
# below in order, then SIGTERM. tests/tools/test_traces.cpp replays every *.jsonl here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
bin="$build/anchorage"
shift || true
wanted=("$@")
want() {  # want NAME: whether this run records the trace NAME
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w; for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

start() {  # start TRACE: sets pid and url
  local log; log="$(mktemp)"
  "$bin" --preset tiny --ctx-size 2048 --port 0 --trace "$1" 2>"$log" &
  pid=$!
  for _ in $(seq 1 200); do
    url="$(grep -o 'http://[0-9.]*:[0-9]*' "$log" || true)"
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$log"; exit 1; }
}
stop() { kill -TERM "$pid"; wait "$pid"; }
post() {  # post PATH BODY
  curl -sS -o /dev/null -w "%{http_code} $1\n" -H 'Content-Type: application/json' --data-binary "$2" "$url$1"
}

# --- basic.jsonl: the routes, greedy and seeded sampling, streaming, and the errors
if want basic; then
start "$here/basic.jsonl"
post /v1/completions '{"model":"anchorage","prompt":"The quick brown fox","max_tokens":16,"temperature":0}'
post /v1/completions '{"prompt":[1,2,3,40,50,60,70,80,90,100],"max_tokens":8,"temperature":0}'
post /v1/chat/completions '{"model":"anchorage","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Hello, who are you?"}],"max_tokens":24,"temperature":0}'
post /v1/chat/completions '{"messages":[{"role":"user","content":"Count to five."}],"max_tokens":24,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}'
post /v1/completions '{"prompt":"Once upon a time","max_tokens":16,"temperature":0.8,"seed":7}'
post /v1/completions '{"prompt":"Unseeded: the sequence number seeds me","max_tokens":12}'
post /v1/completions '{"prompt":"Streaming without usage","max_tokens":10,"temperature":0,"stream":true}'
post /v1/chat/completions '{"messages":[{"role":"user","content":"No thinking, streamed, no usage chunk."}],"max_tokens":16,"temperature":0.7,"seed":3,"stream":true,"chat_template_kwargs":{"enable_thinking":false}}'
post /v1/completions '{"prompt":"Stop at the letter e please","max_tokens":16,"temperature":0,"stop":["e"]}'
post /v1/completions '{"model":"no-such-model","prompt":"hi","max_tokens":4}'
post /v1/chat/completions '{"messages": [{"role": "user", "content": "oops"}'
post /v1/completions '"[1]"'
post /v1/completions "{\"prompt\":\"$(head -c 2100 /dev/zero | tr '\0' 'a')\",\"max_tokens\":4}"
post /v1/completions '{"prompt":"After the errors","max_tokens":8,"temperature":0}'
stop
fi

# --- agent.jsonl: an opencode-like exchange: system prompt, three tools, a user turn, then the
# follow-up carrying the assistant's reasoning and tool call and the tool's result; streamed
# with usage, sampled with the default temperature (seeded by the sequence number).
if want agent; then
start "$here/agent.jsonl"
tools='[{"type":"function","function":{"name":"read","description":"Read a file from the workspace","parameters":{"type":"object","properties":{"filePath":{"type":"string","description":"absolute path"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["filePath"]}}},{"type":"function","function":{"name":"bash","description":"Run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"]}}},{"type":"function","function":{"name":"edit","description":"Replace text in a file","parameters":{"type":"object","properties":{"filePath":{"type":"string"},"oldString":{"type":"string"},"newString":{"type":"string"}},"required":["filePath","oldString","newString"]}}}]'
system='You are opencode, an interactive CLI agent for software engineering tasks. Use the tools to read and edit files. Be concise.'
user='What does src/main.cpp print?'
post /v1/chat/completions "{\"model\":\"anchorage\",\"prompt_cache_key\":\"ses_replay_1\",\"messages\":[{\"role\":\"system\",\"content\":\"$system\"},{\"role\":\"user\",\"content\":\"$user\"}],\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":32,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
post /v1/chat/completions "{\"model\":\"anchorage\",\"prompt_cache_key\":\"ses_replay_1\",\"messages\":[{\"role\":\"system\",\"content\":\"$system\"},{\"role\":\"user\",\"content\":\"$user\"},{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"I should read the file first.\",\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"filePath\\\":\\\"/work/src/main.cpp\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"#include <cstdio>\\nint main() { std::puts(\\\"hello\\\"); }\\n\"}],\"tools\":$tools,\"tool_choice\":\"auto\",\"max_tokens\":32,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
stop
fi

# --- wires.jsonl: the agent wires, Anthropic's Messages API and OpenAI's Responses API, each
# whole and streamed (thinking on, a tool, a tool round trip), then an error of each.
if want wires; then
start "$here/wires.jsonl"
mtool='[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]'
post /v1/messages "{\"model\":\"anchorage\",\"max_tokens\":24,\"system\":[{\"type\":\"text\",\"text\":\"You are terse.\"}],\"messages\":[{\"role\":\"user\",\"content\":\"List the files.\"}],\"tools\":$mtool,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":8},\"metadata\":{\"user_id\":\"replay-session\"}}"
post /v1/messages "{\"model\":\"anchorage\",\"max_tokens\":24,\"stream\":true,\"system\":\"You are terse.\",\"messages\":[{\"role\":\"user\",\"content\":\"List the files.\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\",\"input\":{\"command\":\"ls\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"a.cpp\"}]}],\"tools\":$mtool,\"stop_sequences\":[\"e\"]}"
rtool='[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"array","items":{"type":"string"}}}}}]'
post /v1/responses "{\"model\":\"anchorage\",\"instructions\":\"You are a coding agent.\",\"input\":\"Fix the test.\",\"tools\":$rtool,\"max_output_tokens\":24,\"reasoning\":{\"effort\":\"low\"}}"
post /v1/responses "{\"model\":\"anchorage\",\"stream\":true,\"store\":false,\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Fix the test.\"}]},{\"type\":\"function_call\",\"call_id\":\"call_0\",\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":[\\\"ls\\\"]}\"},{\"type\":\"function_call_output\",\"call_id\":\"call_0\",\"output\":\"a.cpp\"}],\"tools\":$rtool,\"max_output_tokens\":24}"
post /v1/messages '{"model":"anchorage","max_tokens":8,"messages":"not an array"}'
post /v1/responses '{"model":"anchorage","input":[{"type":"function_call_output"}]}'
stop
fi
