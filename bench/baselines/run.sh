#!/usr/bin/env bash
# Runs trnsim side by side with SCALE-Sim v2 (GEMM on a 128x128 weight-stationary array) and
# DRAMsim3 (a sequential read of the same bytes on one HBM2 stack): docs/performance.md,
# "Against SCALE-Sim v2 and DRAMsim3". Nothing is downloaded: give the two source trees.
#
#   SCALESIM=/path/to/scale-sim-v2 DRAMSIM3=/path/to/DRAMsim3 bench/baselines/run.sh [OUT]
#
# Needs: /usr/bin/time, g++, cmake, and for SCALE-Sim Debian's python3-numpy python3-pandas
# python3-tqdm python3-absl. trnsim is build/trnsim unless TRNSIM is set. Each case runs once;
# /usr/bin/time -v's output is OUT/NAME.time (user + system = CPU seconds; maximum resident set).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-/tmp/trnsim-baselines}
trnsim=${TRNSIM:-$repo/build/trnsim}
: "${SCALESIM:?set SCALESIM to a scale-sim-v2 source tree (tested at 22f88b17)}"
: "${DRAMSIM3:?set DRAMSIM3 to a DRAMsim3 source tree (tested at 29817593)}"
mkdir -p "$out"

timed() { # NAME COMMAND...: one run, /usr/bin/time -v into OUT/NAME.time, output into OUT/NAME.out
  local name=$1
  shift
  /usr/bin/time -v -o "$out/$name.time" "$@" >"$out/$name.out" 2>&1
  awk -v n="$name" '/User time/ {u = $NF} /System time/ {s = $NF} /Maximum resident/ {m = $NF}
    END {printf "%-22s cpu %8.2f s  peak %8.1f MiB\n", n, u + s, m / 1024}' "$out/$name.time"
}

# DRAMsim3: the library and the sequential-read driver (in-order issue, as many reads per DRAM
# cycle as the controllers accept; DRAMsim3's own front ends issue at most one per cycle).
if [ ! -f "$DRAMSIM3/build/libdramsim3.so" ] && [ ! -f "$DRAMSIM3/libdramsim3.so" ]; then
  cmake -S "$DRAMSIM3" -B "$DRAMSIM3/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  make -C "$DRAMSIM3/build" -j2 dramsim3 >/dev/null
fi
libdir=$(dirname "$(find "$DRAMSIM3" -name libdramsim3.so -print -quit)")
g++ -O3 -DNDEBUG -std=c++11 -I"$DRAMSIM3/src" -I"$DRAMSIM3/ext/headers" -I"$DRAMSIM3/ext/fmt/include" \
  "$here/dramsim3_stream_driver.cc" -o "$out/stream_driver" -L"$libdir" -ldramsim3 -Wl,-rpath,"$libdir"

for n in 1024 4096; do
  timed "trnsim_gemm_$n" "$trnsim" "$here/gemm_${n}_trnsim.json" --timing-only --no-report --out "$out/trnsim_gemm_$n.d"
done
timed trnsim_stream_512MiB "$trnsim" "$here/stream_read_512MiB_trnsim.json" --timing-only --no-report --out "$out/trnsim_stream.d"
timed trnsim_stream_512MiB_flow "$trnsim" "$here/stream_read_512MiB_trnsim.json" --timing-only --no-report \
  --set dma_flow_model=true --out "$out/trnsim_stream_flow.d"
mkdir -p "$out/dramsim3_512MiB.d"
timed dramsim3_stream_512MiB "$out/stream_driver" "$DRAMSIM3/configs/HBM2_8Gb_x128.ini" 536870912 "$out/dramsim3_512MiB.d"
# SCALE-Sim 4096^3 needs about 35-40 GiB (extrapolated in docs/performance.md): only 1024^3 runs.
(cd "$SCALESIM" && PYTHONPATH="$SCALESIM" timed scalesim_gemm_1024 /usr/bin/python3 scalesim/scale.py \
  -c "$here/scalesim_trn_ws.cfg" -t "$here/gemm_1024.csv" -i gemm -p "$out/scalesim_1024.d")
grep -h "Compute cycles" "$out/scalesim_gemm_1024.out" || true
grep -h "dram_cycles" "$out/dramsim3_stream_512MiB.out" || true
