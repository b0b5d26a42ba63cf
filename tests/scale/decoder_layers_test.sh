#!/usr/bin/env bash
# The decoder workloads of the library are what scripts/decoder-layers writes with the arguments
# its usage text gives (so a change to the script regenerates them, and a hand edit is caught),
# and the script refuses sizes that do not split into heads.
# Usage: decoder_layers_test.sh PYTHON SOURCE_DIR SCRATCH_DIR
set -euo pipefail
python="$1" src="$2" out="$3"
rm -rf "$out" && mkdir -p "$out"
gen="$python $src/scripts/decoder-layers"
$gen -o "$out/llama_decoder_layer.json"
$gen --layers 4 -o "$out/llama_decoder_4_layers.json"
$gen --hidden 256 --heads 2 --seq 256 --ffn 512 --name decoder_layer_small \
  -o "$out/decoder_layer_small.json"
cmp "$out/llama_decoder_layer.json" "$src/workloads/examples/scale/llama_decoder_layer.json"
cmp "$out/llama_decoder_4_layers.json" "$src/workloads/examples/scale/llama_decoder_4_layers.json"
cmp "$out/decoder_layer_small.json" "$src/workloads/examples/decoder_layer_small.json"
# Four layers: four of each projection, each layer reading the one before.
[ "$(grep -c '"op": "scaled_dot_product_attention"' "$out/llama_decoder_4_layers.json")" = 4 ]
grep -q '"args": \["layers.2.y", 2\]' "$out/llama_decoder_4_layers.json"
if $gen --hidden 100 --heads 3 >"$out/bad.txt" 2>&1; then
  echo "decoder-layers accepted hidden 100 in 3 heads" >&2
  exit 1
fi
grep -q "must split into 3 heads" "$out/bad.txt"
echo "decoder_layers_test: ok"
