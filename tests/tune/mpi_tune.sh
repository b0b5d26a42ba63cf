#!/usr/bin/env bash
# The same tune serially and under `mpirun -n 2` (each rank running its share of each batch)
# must make the same search: the same evaluations in the same order with the same times, and
# the same winner, rank 0 writing the results (docs/tune.md, MPI).
# Usage: mpi_tune.sh TRNSIM MPIRUN SCRATCH
set -euo pipefail
trnsim=$1 mpirun=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch"
fail() { echo "mpi-tune: $*" >&2; exit 1; }

cat >w.json <<'JSON'
{"kernel": "rmsnorm", "shape": [256, 512], "dtype": "bf16"}
JSON

# A budget under the space's size: the evolutionary search on both models.
args=(tune w.json --budget 24 --seed 5 --batch 4)
"$trnsim" "${args[@]}" --out serial >serial.out 2>serial.err || { cat serial.err >&2; fail "the serial tune failed"; }

# OpenMPI refuses to run as root unless told; CI runs as root. --oversubscribe: 2 ranks may
# exceed the slots OpenMPI counts on a small machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpirun" -n 2 --oversubscribe "$trnsim" "${args[@]}" --out mpi >mpi.out 2>mpi.err ||
  { cat mpi.out mpi.err >&2; fail "the tune under mpirun -n 2 failed"; }
grep -q "on 2 MPI ranks" mpi.err || { cat mpi.err >&2; fail "the tune did not run over 2 ranks"; }

# Every column but the wall-clock one (elapsed_s, the 6th).
cut -d, --complement -f6 serial/results.csv >serial.csv
cut -d, --complement -f6 mpi/results.csv >mpi.csv
cmp serial.csv mpi.csv || { diff serial.csv mpi.csv >&2; fail "the evaluations differ"; }
[ "$(head -1 serial.out)" = "$(head -1 mpi.out)" ] || fail "the winners differ: $(head -1 serial.out) | $(head -1 mpi.out)"
grep -q "functional check of the best: pass" mpi.out || { cat mpi.out >&2; fail "the winner was not checked"; }

# Bad input is refused on every rank before any point runs.
if "$mpirun" -n 2 --oversubscribe "$trnsim" tune w.json --fix nosuch=1 --out bad >bad.out 2>bad.err; then
  fail "an unknown parameter was accepted under mpirun"
fi
grep -q "no parameter nosuch" bad.err || { cat bad.err >&2; fail "the error does not name nosuch"; }
[ ! -e bad ] || fail "a point ran for bad input"
echo "mpi-tune: serial and mpirun -n 2 searches are identical"
