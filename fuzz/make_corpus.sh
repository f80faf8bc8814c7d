#!/usr/bin/env bash
# Writes the seeds of the corpora in fuzz/corpus/<harness>/ from the fixtures; what scripts/fuzz.sh kept
# there from earlier runs stays. Binary seeds (GGUF files, tiny models, saved states) come from
# fuzz_make_seeds, which scripts/fuzz.sh builds in build-fuzz/; text seeds for the tokenizers and the seeds
# from every fixture file are written here. Keeps every seed small (the corpus stays under 5 MB).
#   fuzz/make_corpus.sh [build dir, default build-fuzz]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-fuzz}
out="$root/fuzz/corpus"
seeds="$build/fuzz/fuzz_make_seeds"

# Seeds from every fixture file: each GGUF's first 64 KiB (header, metadata, vocabulary: what the reader
# parses before any tensor data) for the reader and every vocabulary test text for each tokenizer family
# (the saved states of fixtures/state are fuzz_make_seeds' llama_cpp_* seeds).
fixture_seeds() {  # fixture_seeds ROOT OUT
  local r=$1 o=$2 f v
  mkdir -p "$o"/{gguf,tokenize}
  for f in "$r"/fixtures/golden/models/*.gguf "$r"/fixtures/vocab/*.gguf "$r"/models/*.gguf; do
    head -c 65536 "$f" > "$o/gguf/fixture_$(basename "$f" .gguf)"
  done
  # fuzz_lora: a scale byte, then the fixtures' adapters (valid against its base, llama-F16).
  mkdir -p "$o"/lora
  for f in "$r"/fixtures/golden-lora/models/*.gguf; do
    { printf '\x00'; cat "$f"; } > "$o/lora/fixture_$(basename "$f" .gguf)"
  done
  for f in "$r"/fixtures/vocab/*.inp; do
    for v in 0 1 2; do
      { printf "\\x0$v"; head -c 65535 "$f"; } > "$o/tokenize/inp_$(basename "$f" .gguf.inp)_$v"
    done
  done
}
# fuzz_chat: a template (the marker strings of each format, or a format name), a 0 byte, then messages
# separated by 1 bytes (system, user, assistant, ...).
chat_seeds() {  # chat_seeds OUT
  local o=$1/chat m
  mkdir -p "$o"
  local -a markers=("{% for m in messages %}<|im_start|>{{ m.role }}" "<|start_header_id|>x<|end_header_id|>"
    "<|assistant|><|end|>" "<start_of_turn>" "<|user|></s>" "[SYSTEM_PROMPT][INST]" "[INST]" "chatml" "gemma" "")
  for m in "${markers[@]}"; do
    printf '%s\x00Be brief.\x01Hello\x01Hi! How can I help?\x01Tell me a story.' "$m" \
      > "$o/$(printf '%s' "$m" | md5sum | cut -c1-12)"
  done
}
# fuzz_tool_calls: a format byte (hermes 2, llama3 3, mistral-nemo 4, functionary 3.1 5 / 3.2 6, command-r7b 7,
# firefunction 8, gpt-oss 9, generic 1, qwen3-coder 10; +0x10 the prompt opened <think>), a cut byte, then a reply.
tool_calls_seeds() {  # tool_calls_seeds OUT
  local o=$1/tool_calls
  mkdir -p "$o"
  local -a replies=(
    '\x02\x80<think>\nplan\n</think>\n\nOk.<tool_call>\n{"name": "f", "arguments": {"a": [1, "}"]}}\n</tool_call>'
    '\x03\x40{"name": "f", "parameters": {"x": 1}}; {"name": "g", "parameters": {}}'
    '\x03\x20Hi<|python_tag|>brave_search.call(query="a", n=2)'
    '\x04\x60Sure. [TOOL_CALLS][{"name": "f", "arguments": {"x": "]"}, "id": "abcdefghi"}]'
    '\x05\x90<function=f>{"q": 1}</function><|python_tag|>print(1)'
    '\x06\x30all\nText.>>>f\n{"a": 1}>>>python\nx = 2'
    '\x07\xa0<|START_THINKING|>t<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {}}]<|END_ACTION|><|START_RESPONSE|>r<|END_RESPONSE|>'
    '\x08\x50 functools[{"name": "f", "arguments": {"n": 1}}]'
    '\x09\x70<|channel|>analysis<|message|>why<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>'
    '\x01\x10{"tool_calls": [{"name": "f", "arguments": {}}], "response": "\\ud83d\\ude00"}'
    '\x0a\x66Sure.\n<tool_call>\n<function=f>\n<parameter=city>\nOslo\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>'
    '\x12\x99thinking on\n</think>\n<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
  )
  local r i=0
  for r in "${replies[@]}"; do
    printf "$r" > "$o/seed_$i"
    i=$((i + 1))
  done
}
if [ "${1:-}" = "--fixtures-only" ]; then  # the seeds that need no build
  fixture_seeds "$root" "$out"
  chat_seeds "$out"
  tool_calls_seeds "$out"
  exit 0
fi
if [ ! -x "$seeds" ]; then
  echo "make_corpus: $seeds is missing; run scripts/fuzz.sh once (it builds it)" >&2
  exit 1
fi
mkdir -p "$out"/{gguf,model_load,tokenize,state,chat,json_schema}
ASAN_OPTIONS=detect_leaks=0 "$seeds" "$out"

# fuzz_tokenize: byte 0 = vocabulary (0 SPM, 1 BPE, 2 WPM) | 0x04 add_special | 0x08 parse_special
# | 0x10 remove_special | 0x20 unparse_special | 0x40 bytes as token ids.
tok() {  # tok NAME FLAGS < text
  { printf "\\x$(printf %02x "$2")"; cat; } > "$out/tokenize/$1"
}
vocab=(llama-spm gpt-2 bert-bge)
for v in 0 1 2; do
  # The reference texts of the fixture set, with and without special handling.
  tok "fixture_$v" "$v" < "$root/fixtures/vocab/ggml-vocab-${vocab[$v]}.gguf.inp"
  tok "fixture_special_$v" $((v | 0x04 | 0x08 | 0x30)) < "$root/fixtures/vocab/ggml-vocab-${vocab[$v]}.gguf.inp"
  printf '<s>Hello</s> <unk> <|endoftext|> [CLS] a [SEP] [MASK] [UNK] <0x0A>' | tok "specials_$v" $((v | 0x0c))
  printf 'ok\xff\xfe\xc3 \xe2\x82 \xf0\x9f\x98 end\x80\xbf \xed\xa0\x80 \xf4\x90\x80\x80' | tok "bad_utf8_$v" "$v"
  printf ' \t\n\r\x00\x0b\x0c\xc2\xa0\xe3\x80\x80  x  ' | tok "spaces_$v" $((v | 0x04))
  printf '\x01\x00\x00\x00\xff\xff\xff\xff\x00\x01\x00\x00\xff\xff\xff\x7f\x02\x00\x00\x00' | tok "ids_$v" $((v | 0x60))
done
fixture_seeds "$root" "$out"
chat_seeds "$out"
tool_calls_seeds "$out"
du -sh "$out"
