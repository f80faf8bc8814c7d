#!/usr/bin/env bash
# Regenerates the seed corpora in fuzz/corpus/<harness>/ from the fixtures. Binary seeds (GGUF files,
# tiny models, saved states) come from fuzz_make_seeds, which scripts/fuzz.sh builds in build-fuzz/;
# text seeds for the tokenizers are written here. Keeps every seed small (the corpus stays under 5 MB).
#   fuzz/make_corpus.sh [build dir, default build-fuzz]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-fuzz}
out="$root/fuzz/corpus"
seeds="$build/fuzz/fuzz_make_seeds"
if [ ! -x "$seeds" ]; then
  echo "make_corpus: $seeds is missing; run scripts/fuzz.sh once (it builds it)" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"/{gguf,model_load,tokenize,state}
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
du -sh "$out"
