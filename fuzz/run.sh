#!/usr/bin/env bash
# Runs every fuzz target for DURATION seconds (default 30) on a temporary copy of its seed
# corpus, so nothing is written into the repository, as many at once as there are cores
# (FUZZ_JOBS to choose); fails on the first crash, leak or timeout (starting no target after it)
# and says where the crashing input is. Usage: bash fuzz/run.sh [SECONDS]
set -euo pipefail

duration="${1:-30}"
if ! [[ "$duration" =~ ^[0-9]+$ ]] || [ "$duration" -lt 1 ]; then
    echo "usage: $0 [SECONDS]  (a whole number of seconds per target, default 30)" >&2
    exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")"

rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

work="$(mktemp -d "${TMPDIR:-/tmp}/crm-plugin-fuzz.XXXXXX")"
failed=0
cleanup() {
    if [ "$failed" -eq 0 ]; then
        rm -rf "$work"
    fi
    # cargo-fuzz creates fuzz/artifacts/<target>/ even when told to save crashes elsewhere.
    if [ -d artifacts ]; then
        find artifacts -depth -type d -empty -delete
    fi
}
trap cleanup EXIT

cargo +nightly fuzz build
targets=()
while IFS= read -r target; do
    targets+=("$target")
done < <(cargo +nightly fuzz list)

# One target per core at a time: each libFuzzer run is single-threaded, so on a two-core CI
# machine two targets fuzz side by side, each still for the full DURATION.
jobs="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"

# Fuzzes one target; its summary line goes to $work/<target>.result, its status is the run's.
fuzz_target() {
    local target="$1"
    local corpus="$work/corpus/$target"
    local artifacts="$work/artifacts/$target"
    local log="$work/$target.log"
    mkdir -p "$corpus" "$artifacts"
    if [ -d "corpus/$target" ]; then
        cp -R "corpus/$target/." "$corpus/"
    fi
    echo "fuzzing $target for ${duration}s" >&2
    if ! cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$duration" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "FAIL $target: crashing input(s) in $artifacts (log $log);" \
            "reproduce with: cargo +nightly fuzz run $target <file>" >&2
        echo "$target: FAILED (see $artifacts)" >"$work/$target.result"
        return 1
    fi
    local runs
    runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)"
    if [ -z "$runs" ]; then
        runs="$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -n 1)"
    fi
    echo "$target: ${runs:-?} executions in ${duration}s, no crash" >"$work/$target.result"
}

running=0
for target in "${targets[@]}"; do
    if [ "$failed" -ne 0 ]; then
        break
    fi
    fuzz_target "$target" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done

for target in "${targets[@]}"; do
    if [ -f "$work/$target.result" ]; then
        cat "$work/$target.result"
    fi
done
exit "$failed"
