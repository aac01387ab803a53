#!/usr/bin/env bash
# Decoding cost of two builds side by side, in one run: `memscope-bench --phase model`
# (read, decode, build the model, summarize) of each binary on the same file,
# alternating, RUNS times each. Prints user CPU seconds per run, the medians and their
# ratio, and — when valgrind is installed — the instructions each executes (exact and
# unaffected by other load on the machine, unlike CPU time).
#
#   bench/reader_ab.sh REFERENCE_BIN CANDIDATE_BIN FILE [RUNS]
#
# Build the reference from an older commit into its own directory, e.g.
#   git archive <commit> | tar -x -C /tmp/ref && \
#     (cd /tmp/ref && CARGO_TARGET_DIR=/tmp/ref-target cargo build --release -p memscope-bench)
set -euo pipefail
ref=$1 cand=$2 file=$3 runs=${4:-7}
declare -a ref_s cand_s
cpu() { /usr/bin/time -f %U "$1" --phase model "$file" 2>&1 >/dev/null | tail -n 1; }
for ((i = 0; i < runs; i++)); do
  ref_s+=("$(cpu "$ref")")
  cand_s+=("$(cpu "$cand")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
r=$(median "${ref_s[@]}") c=$(median "${cand_s[@]}")
echo "reference user CPU (s): ${ref_s[*]}  median $r"
echo "candidate user CPU (s): ${cand_s[*]}  median $c"
awk -v r="$r" -v c="$c" 'BEGIN {printf "candidate / reference: %.3f\n", c / r}'
if command -v valgrind >/dev/null; then
  count() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$1" --phase model "$file" 2>&1 >/dev/null | awk '/I *refs/ {gsub(",", "", $NF); print $NF}'
  }
  ri=$(count "$ref") ci=$(count "$cand")
  awk -v r="$ri" -v c="$ci" 'BEGIN {printf "instructions: reference %.3fG, candidate %.3fG, ratio %.3f\n", r / 1e9, c / 1e9, c / r}'
fi
