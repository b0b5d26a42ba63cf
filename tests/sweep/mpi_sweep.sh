#!/usr/bin/env bash
# The same sweep serially and under `mpirun -n 2` (each rank running its points with -j 2) must
# give the same results.csv and results.json, rank 0 writing them (docs/sweeps.md, MPI).
# Usage: mpi_sweep.sh TRNSIM MPIRUN SCRATCH
set -euo pipefail
trnsim=$1 mpirun=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch"
fail() { echo "mpi-sweep: $*" >&2; exit 1; }

cat >w.json <<'JSON'
{"kernel": "rmsnorm", "shape": [256, 512], "dtype": "bf16"}
JSON
cat >s.json <<'JSON'
{
  "name": "mpi",
  "workloads": ["w.json"],
  "grid": {"clock.scalar_mhz": [600, 1200, 2400]},
  "zip": {"hbm.stack_bytes_per_ns": [181.25, 725], "hbm_latency_ns": [35, 70]}
}
JSON

"$trnsim" sweep s.json --out serial >serial.out 2>serial.err || { cat serial.err >&2; fail "the serial sweep failed"; }

# OpenMPI refuses to run as root unless told; CI runs as root. --oversubscribe: 2 ranks may
# exceed the slots OpenMPI counts on a small machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpirun" -n 2 --oversubscribe "$trnsim" sweep s.json -j 2 --out mpi >mpi.out 2>mpi.err ||
  { cat mpi.out mpi.err >&2; fail "the sweep under mpirun -n 2 failed"; }
grep -q "over 2 MPI ranks" mpi.err || { cat mpi.err >&2; fail "the sweep did not run over 2 ranks"; }
grep -q "rank 1 of 2" mpi.err || { cat mpi.err >&2; fail "rank 1 ran no point"; }

cmp serial/results.csv mpi/results.csv || { diff serial/results.csv mpi/results.csv >&2; fail "results.csv differs"; }
cmp serial/results.json mpi/results.json || fail "results.json differs"
[ "$(grep -c ',ok,' mpi/results.csv)" -eq 6 ] || fail "expected 6 ok points: $(cat mpi/results.csv)"

# A bad sweep file is refused on every rank before any point runs.
echo '{"workloads": "w.json", "grid": {"pe_rows": [64, 1024]}}' >bad.json
if "$mpirun" -n 2 --oversubscribe "$trnsim" sweep bad.json --out bad >bad.out 2>bad.err; then
  fail "a bad sweep file was accepted under mpirun"
fi
grep -q "/grid/pe_rows/1" bad.err || { cat bad.err >&2; fail "the error does not name /grid/pe_rows/1"; }
[ ! -e bad ] || fail "a point ran for a bad sweep file"
echo "mpi-sweep: serial and mpirun -n 2 results are identical"
