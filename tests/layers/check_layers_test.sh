#!/usr/bin/env bash
# The layering check fails when any one of the include-direction fixes of the structure change
# is reverted: each case copies the project's C++ sources to a scratch tree, adds back one
# include the old layout had (or one that would cross a wall), and expects scripts/check-layers
# to exit 1 naming that file and the folder it may not include.
# Usage: check_layers_test.sh PYTHON SOURCE_DIR SCRATCH_DIR
set -euo pipefail
python="$1"
src="$2"
scratch="$3"
rm -rf "$scratch"
mkdir -p "$scratch"

copy_tree() {
  local to="$1"
  mkdir -p "$to"
  for d in base config isa compiler models workloads sim python; do
    [ -d "$src/$d" ] && cp -r "$src/$d" "$to/"
  done
  return 0
}

clean="$scratch/clean"
copy_tree "$clean"
"$python" "$src/scripts/check-layers" --root "$clean" >/dev/null ||
  { echo "FAIL: the copied tree does not pass"; exit 1; }

failures=0
# FILE|INCLUDE|what the old layout or a wrong turn did
cases=(
  "models/dma/memory_model.hpp|models/systemc/semaphore_file.hpp|plain DMA model reaches the SystemC shells (old cycle dma <-> neuroncore)"
  "models/systemc/host_module.cpp|models/chip/simulate.hpp|a shell reaches the system top (old cycle host <-> neuroncore)"
  "models/neuroncore/cost.hpp|models/dma/dma_plan.hpp|sibling timing models include each other"
  "workloads/kernels/matmul.cpp|models/dma/dma_plan.hpp|a lowering reaches past the estimate API into the DMA model"
  "workloads/graph/graph_lowering.cpp|models/neuroncore/cost.hpp|a lowering reaches past the estimate API into the cost model"
  "workloads/kernels/rmsnorm.hpp|workloads/lowering.hpp|a kernel includes the workload-file layer above it"
  "workloads/graph/graph.cpp|workloads/workload.hpp|the graph form includes the workload-file layer above it"
  "compiler/synchronize.cpp|isa/text/assembly.hpp|the compiler includes the text forms"
  "config/arch.hpp|isa/instruction.hpp|hardware configuration includes the ISA above it"
  "sim/report/explain.cpp|sim/run/run.hpp|a reporter includes the runner above it"
  "sim/io/input_file.cpp|sim/report/stats.hpp|file input includes a reporter"
  "isa/program.hpp|models/records/records.hpp|the ISA includes a model"
)
i=0
for c in "${cases[@]}"; do
  IFS='|' read -r file include why <<<"$c"
  i=$((i + 1))
  tree="$scratch/case$i"
  cp -a "$clean" "$tree"
  [ -f "$tree/$file" ] || { echo "FAIL: $file is not in the tree"; failures=$((failures + 1)); continue; }
  printf '#include "%s"\n' "$include" >>"$tree/$file"
  if out=$("$python" "$src/scripts/check-layers" --root "$tree" 2>&1); then
    echo "FAIL: not caught: $file includes $include ($why)"
    failures=$((failures + 1))
  elif ! grep -q "$file:.*includes \"$include\"" <<<"$out"; then
    echo "FAIL: caught, but the message does not name $file and $include:"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok: $why"
  fi
done
# A new folder of C++ that the table does not place is refused.
tree="$scratch/new_folder"
cp -a "$clean" "$tree"
mkdir -p "$tree/models/newmodel"
echo '#include "isa/program.hpp"' >"$tree/models/newmodel/x.hpp"
if "$python" "$src/scripts/check-layers" --root "$tree" >/dev/null 2>&1; then
  echo "FAIL: an unplaced folder passed"
  failures=$((failures + 1))
else
  echo "ok: an unplaced folder is refused"
fi
rm -rf "$scratch"
[ "$failures" -eq 0 ]
