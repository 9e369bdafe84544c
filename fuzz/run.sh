#!/usr/bin/env bash
# Runs every fuzz target for DURATION seconds (default 30) on a temporary copy of its seed
# corpus, so nothing is written into the repository; fails on the first crash, leak or timeout
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

summary=()
for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    artifacts="$work/artifacts/$target"
    log="$work/$target.log"
    mkdir -p "$corpus" "$artifacts"
    if [ -d "corpus/$target" ]; then
        cp -R "corpus/$target/." "$corpus/"
    fi
    echo "fuzzing $target for ${duration}s" >&2
    if ! cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$duration" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" >"$log" 2>&1; then
        failed=1
        tail -n 60 "$log" >&2
        echo "FAIL $target: crashing input(s) in $artifacts (log $log);" \
            "reproduce with: cargo +nightly fuzz run $target <file>" >&2
        summary+=("$target: FAILED (see $artifacts)")
        break
    fi
    runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)"
    if [ -z "$runs" ]; then
        runs="$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -n 1)"
    fi
    summary+=("$target: ${runs:-?} executions in ${duration}s, no crash")
done

printf '%s\n' "${summary[@]}"
exit "$failed"
