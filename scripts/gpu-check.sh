#!/usr/bin/env bash
# The GPU machine's check of a commit: builds everything for sm_90, runs `ctest -L gpu`, then
# compute-sanitizer memcheck and racecheck over every GPU test suite at small sizes (the large
# cases are filtered out: under the sanitizer they would take minutes each).
# Logs go to $OUT (or ./gpu-check-out). Run from the repository root on the GPU machine, with
# .deps (TBB, GTest) carried; see scripts/device-build.sh.
# With GPU_CHECK_BENCH=<name> it also runs canopy-bench and canopy-sat-bench between the tests and
# the sanitizers (the GPU to themselves), writing <name>.json and sat-<name>.json to the log folder;
# set CANOPY_COMMIT to the commit being checked (the machine's copy of the tree has no .git).
set -uo pipefail
out=${OUT:-gpu-check-out}
mkdir -p "$out"
. scripts/device-build.sh >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "gpu-check: build ok"
(cd build-gpu && ctest -L gpu --output-on-failure -j 4 --timeout 600) >"$out/ctest-gpu.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|Not Run|Timeout|Skipped" "$out/ctest-gpu.log"

bench_rc=0
if [ -n "${GPU_CHECK_BENCH:-}" ]; then
  build-gpu/bench/primitives/canopy-bench --out "$out/$GPU_CHECK_BENCH.json" >"$out/bench.txt" 2>&1 || bench_rc=1
  build-gpu/bench/sat/canopy-sat-bench --out "$out/sat-$GPU_CHECK_BENCH.json" >"$out/sat-bench.txt" 2>&1 || bench_rc=1
  echo "gpu-check: benchmarks rc=$bench_rc"
fi

# Small cases only: under the sanitizer the large ones would take minutes each. Suites run in
# parallel (the GPU has room for all of them) with a time limit each.
export small='Cuda*-*Large*:*2Pow2*:*At2Pow*:*Perf*:*LargeHostSizes*:*LargeU32*:*PowerOfTwoSizes*:*AllSizes*:*1023x769*:*Pow2Plus1*'
export out
sanitize_one() {
  local exe=$1 tool=$2 name log rc ran summary
  name=$(basename "$exe")
  log="$out/sanitize-$name-$tool.log"
  timeout "${SANITIZE_TIMEOUT:-200}" compute-sanitizer --tool "$tool" --error-exitcode 3 "$exe" --gtest_filter="$small" >"$log" 2>&1
  rc=$?
  ran=$(grep -cE '^\[       OK \]' "$log")
  summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
  [ "$ran" -gt 0 ] || rc=99  # a run that checked no test checked nothing
  printf 'sanitize %-22s %-9s rc=%-3s tests=%-3s %s\n' "$name" "$tool" "$rc" "$ran" "$summary"
}
export -f sanitize_one
# Suites with no Cuda* test (host-only ones) make no CUDA call for the sanitizer to watch: skipped.
ls build-gpu/tests/test_* | grep -v test_runtime | while read -r exe; do
  "$exe" --gtest_list_tests 2>/dev/null | grep -q Cuda || continue
  echo "$exe memcheck"; echo "$exe racecheck"
done | xargs -P 12 -L 1 bash -c 'sanitize_one "$0" "$1"' | sort | tee "$out/sanitize-summary.txt"
sanitizer_rc=0
grep -vqE 'rc=0 ' "$out/sanitize-summary.txt" && sanitizer_rc=1
exit $(( ctest_rc != 0 || sanitizer_rc != 0 || bench_rc != 0 ))
