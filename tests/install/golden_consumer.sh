#!/usr/bin/env bash
# Installs trnsim into a fresh prefix, then configures and builds examples/golden-consumer
# against it with find_package(trnsim), as a user's project would, and runs its ctest.
# Usage: golden_consumer.sh CMAKE CTEST BUILD_DIR CONSUMER_SOURCE SCRATCH
set -euo pipefail
cmake=$1 ctest=$2 build=$3 consumer=$4 scratch=$5
rm -rf "$scratch"
mkdir -p "$scratch"
prefix="$scratch/prefix"

fail() { echo "golden-consumer: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$scratch/install.log"
for f in bin/trnsim share/trnsim/examples/rmsnorm.json share/trnsim/examples/micro_pe.tasm \
         lib/cmake/trnsim/trnsimConfig.cmake lib/cmake/trnsim/trnsimConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
[ -x "$prefix/bin/trnsim" ] || fail "the installed bin/trnsim is not executable"

# The presets are built in (the binary reads no data file), and installed as a start for users'
# own arch files; the installed binary runs from any directory, sweeps included.
for f in share/trnsim/arch/trn1.json share/trnsim/arch/trn2.json share/trnsim/arch/trn3.json \
         share/trnsim/examples/sweeps/rmsnorm_hbm_bandwidth.json; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
mkdir -p "$scratch/elsewhere"
(cd "$scratch/elsewhere" && "$prefix/bin/trnsim" params --arch trn3 >params.txt) ||
  fail "the installed trnsim cannot list the trn3 preset"
grep -q "^sbuf_partition_bytes *262144" "$scratch/elsewhere/params.txt" ||
  fail "the installed trn3 preset is not arch/trn3.json's"
(cd "$scratch/elsewhere" &&
  "$prefix/bin/trnsim" params --arch "$prefix/share/trnsim/arch/trn2.json" >trn2-file.txt &&
  "$prefix/bin/trnsim" params --arch trn2 >trn2.txt) || fail "the installed trn2.json is not an arch file"
# Same names and values (the sources name the file they came from).
diff <(awk '{print $1, $2}' "$scratch/elsewhere/trn2.txt" | sed -n '/^name /,$p') \
     <(awk '{print $1, $2}' "$scratch/elsewhere/trn2-file.txt" | sed -n '/^name /,$p') >/dev/null ||
  fail "the installed arch/trn2.json reads back to other values than the built-in trn2"
(cd "$scratch/elsewhere" && "$prefix/bin/trnsim" sweep \
  "$prefix/share/trnsim/examples/sweeps/rmsnorm_hbm_bandwidth.json" -j 2 --out sweep \
  >sweep.out 2>sweep.err) || { cat "$scratch/elsewhere/sweep.err" >&2; fail "the installed example sweep failed"; }
[ "$(grep -c ',ok,' "$scratch/elsewhere/sweep/results.csv")" -ge 8 ] ||
  fail "the installed example sweep has too few points: $(cat "$scratch/elsewhere/sweep/results.csv")"

"$cmake" -S "$consumer" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$scratch/configure.log" || { cat "$scratch/configure.log" >&2; fail "configure failed"; }
"$cmake" --build "$scratch/consumer" >"$scratch/build.log" ||
  { cat "$scratch/build.log" >&2; fail "build failed"; }

# The registered test runs the installed binary's `check` on the consumer's files.
"$ctest" --test-dir "$scratch/consumer" --show-only=json-v1 >"$scratch/tests.json"
grep -q "\"$prefix/bin/trnsim\"" "$scratch/tests.json" ||
  fail "the golden test does not run the installed trnsim: $(cat "$scratch/tests.json")"
grep -q '"check"' "$scratch/tests.json" || fail "the golden test does not run trnsim check"
grep -q 'rmsnorm_small.golden.json' "$scratch/tests.json" || fail "the golden file is not passed"
# Options after GOLDEN reach trnsim check, without the ARGS keyword docs/golden.md never showed.
grep -q '"--full"' "$scratch/tests.json" ||
  fail "trnsim_add_golden_test did not pass its options to trnsim check: $(cat "$scratch/tests.json")"

# A version the package cannot satisfy must be refused.
mkdir -p "$scratch/too-new"
printf 'cmake_minimum_required(VERSION 3.18)\nproject(x NONE)\nfind_package(trnsim 99 REQUIRED)\n' \
  >"$scratch/too-new/CMakeLists.txt"
if "$cmake" -S "$scratch/too-new" -B "$scratch/too-new/build" -DCMAKE_PREFIX_PATH="$prefix" \
  >/dev/null 2>&1; then
  fail "find_package(trnsim 99) was satisfied by version $("$prefix/bin/trnsim" --version)"
fi

if "$prefix/bin/trnsim" check --help >/dev/null 2>&1; then
  "$ctest" --test-dir "$scratch/consumer" --output-on-failure
else
  echo "golden-consumer: 'trnsim check' is not in this build; configure and build checked only"
fi
