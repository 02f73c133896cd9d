#!/bin/sh
# Generates the synthetic model folders that tests/integration/synth_models_test.cpp reads:
#   tools/make_test_models.sh OUTDIR      then   EBB_TEST_MODELS=OUTDIR ctest ...
# Folders: llama-tiny-fp32 llama-tiny-int4 (block 128) llama-tiny-int4-b32 phi3-tiny-fp32-unfused qwen2-tiny-fp32 gpt2-tiny-fp32
#          bert-tiny-fp32 minilm-shape-fp32. Each decoder folder also gets reference_greedy.json
#          from tools/reference_forward.py (greedy tokens and logits for two right-padded prompts);
#          bert-tiny-fp32 gets reference_embed.json (mean/CLS/max/mean_sqrt_len/weightedmean vectors
#          of $BERT_ROWS).
#          minilm-shape-fp32 is all-MiniLM-L6-v2's shape (6 layers, 384 hidden, 12 heads, vocab
#          30522) with random weights and 1_Pooling/config.json (mean); its tokenizer is the real
#          ../shared/models/tokenizers/all-minilm-l6-v2/tokenizer.json when that file exists (or
#          $EBB_SHARED_DIR/...), else the synthesizer's own (1024 learned tokens, to stay quick).
# Idempotent: a folder whose .make_test_models stamp matches (this script's version, synth_model.py's
# SCRIPT_VERSION, a hash of the generator sources, the arguments) is kept; others are regenerated.
# Needs /usr/bin/python3 with python3-onnx and python3-numpy (override with PYTHON=...).
set -eu

MAKE_TEST_MODELS_VERSION=1
PROMPTS="5,17,42,99,7,300;8,9,10;11,12,13,14"
MAX_LENGTH=12
BERT_ROWS="2,50,60,70,3;2,100,3;2,5,6,7,8,9,10,11,12,13,14,15,16,17,3"
SHARED=${EBB_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
MINILM_TOKENIZER="$SHARED/models/tokenizers/all-minilm-l6-v2/tokenizer.json"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 OUTDIR [--soak]" >&2
  exit 2
fi
OUT=$1
SOAK=${2:-}
TOOLS=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-/usr/bin/python3}
SYNTH_VERSION=$(sed -n 's/^SCRIPT_VERSION = "\(.*\)"/\1/p' "$TOOLS/synth_model.py")
# Content hash of the generators, so an edited script regenerates even without a version bump.
SOURCES_HASH=$(cat "$TOOLS/synth_model.py" "$TOOLS/reference_forward.py" "$0" | sha256sum | cut -c1-16)
mkdir -p "$OUT"

make_one() {  # name family precision [extra args...]
  name=$1; family=$2; precision=$3; shift 3
  dir="$OUT/$name"
  stamp="make_test_models=$MAKE_TEST_MODELS_VERSION synth_model=$SYNTH_VERSION sources=$SOURCES_HASH args=--family $family --preset tiny --precision $precision --seed 0 $* ref=$PROMPTS/$MAX_LENGTH/$BERT_ROWS"
  if [ -f "$dir/.make_test_models" ] && [ "$(cat "$dir/.make_test_models")" = "$stamp" ]; then
    echo "up to date: $dir"
    return 0
  fi
  rm -rf "$dir.tmp"
  "$PY" "$TOOLS/synth_model.py" --family "$family" --preset tiny --precision "$precision" --seed 0 "$@" \
    --out "$dir.tmp" >/dev/null
  if [ "$family" != bert ]; then
    "$PY" "$TOOLS/reference_forward.py" "$dir.tmp" --input-ids "$PROMPTS" --max-length "$MAX_LENGTH" --json \
      > "$dir.tmp/reference_greedy.json"
  elif [ "$name" = bert-tiny-fp32 ]; then
    "$PY" "$TOOLS/reference_forward.py" "$dir.tmp" --input-ids "$BERT_ROWS" --embed \
      > "$dir.tmp/reference_embed.json"
  else
    # A sentence-transformers pooling config, read by ebb like an export's.
    mkdir -p "$dir.tmp/1_Pooling"
    printf '%s\n' '{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false}' \
      > "$dir.tmp/1_Pooling/config.json"
  fi
  printf '%s\n' "$stamp" > "$dir.tmp/.make_test_models"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "generated: $dir"
}

if [ "$SOAK" = --soak ]; then
  # The create/destroy loop at the issue's size: 128 KiB of KV per token, 64 MiB per generator
  # at 512 tokens (label soak).
  make_one llama-kvloop64 llama fp32 --layers 64 --hidden 256 --heads 2 --kv-heads 2 \
    --head-size 128 --intermediate 128 --vocab 512 --context-length 1024
  exit 0
fi

make_one llama-tiny-fp32 llama fp32
make_one llama-tiny-int4 llama int4
# The decode-batch tests need batched greedy tokens to equal solo runs bitwise; ORT's MatMulNBits
# at M > 1 is not bitwise M = 1 (docs/memory.md), and at block 128 one of them (staggered joins)
# flips a near-tie on llama-tiny-int4 (ORT 1.29 and 1.30 alike); at block 32 none does.
make_one llama-tiny-int4-b32 llama int4 --block-size 32
make_one phi3-tiny-fp32-unfused phi3 fp32 --rotary-form unfused
make_one qwen2-tiny-fp32 qwen2 fp32
make_one gpt2-tiny-fp32 gpt2 fp32
make_one bert-tiny-fp32 bert fp32
if [ -f "$MINILM_TOKENIZER" ]; then
  make_one minilm-shape-fp32 bert fp32 --layers 6 --hidden 384 --heads 12 --intermediate 1536 \
    --vocab 30522 --tokenizer "$MINILM_TOKENIZER"
else
  make_one minilm-shape-fp32 bert fp32 --layers 6 --hidden 384 --heads 12 --intermediate 1536 \
    --vocab 30522 --tokenizer-tokens 1024
fi
# float16 KV cache and logits (GPU-export style), computing in float32 inside: same greedy tokens.
FP16="$OUT/llama-tiny-fp16io"
if [ ! -f "$FP16/.make_test_models" ] || ! cmp -s "$OUT/llama-tiny-fp32/.make_test_models" "$FP16/.make_test_models"; then
  rm -rf "$FP16.tmp" "$FP16"
  "$PY" "$TOOLS/fp16_io.py" "$OUT/llama-tiny-fp32" "$FP16.tmp"
  mv "$FP16.tmp" "$FP16"
  echo "generated: $FP16"
fi
# For the arena tests: wide activations (a 2048-token prompt grows ORT's arena by ~60 MiB).
make_one llama-wide llama fp32 --layers 2 --hidden 256 --heads 4 --kv-heads 4 --head-size 64 \
  --intermediate 1024 --vocab 1024 --context-length 4096
# For the unload test: the `small` preset (88 M parameters) in int4, 77 MB.
make_one llama-small-int4 llama int4 --preset small
# For the model-file pages test: int4 weights in model.onnx.data, which ORT maps and prepacks from
# (the MatMulNBits scales stay mapped: ~0.5 MiB resident after load at block 32; block 128 has a
# quarter of the scales, 136 KiB, too few for the test to see the release).
make_one llama-int4-extdata llama int4 --external-data always --hidden 256 --heads 4 --kv-heads 4 \
  --head-size 64 --intermediate 2048 --block-size 32
# For the create/destroy loop test: 32 KiB of KV per token (16 MiB per generator at 512 tokens).
make_one llama-kvloop llama fp32 --layers 32 --hidden 128 --heads 2 --kv-heads 2 --head-size 64 \
  --intermediate 128 --vocab 512 --context-length 1024
