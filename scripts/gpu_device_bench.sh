#!/usr/bin/env bash
# The GPU hardware check: prebuilt benchmark binaries run on a machine without Rust.
#
#   scripts/gpu_device_bench.sh prepare   # here, with Rust: builds bench_gpu and
#                                         # bench_gpu_fallback (release) and fetches the Vulkan
#                                         # loader into target/device-bench/
#   scripts/gpu_device_bench.sh run [OUT] # there, from the repository root with
#                                         # target/device-bench/ carried along: installs the
#                                         # loader, names the adapter, prints the JSON rows
#                                         # (and writes them to OUT/rows.jsonl when OUT is given)
#
# `run` takes at most 6 minutes (about 1.5 on an H200): every benchmark runs under its own timeout, so one that hangs
# costs its share and the rest still print. Every row names its adapter and carries the GPU time
# per frame from timestamp queries (`gpu_ms`), dispatches per frame and submissions per frame.
set -u
here=target/device-bench
case "${1:-}" in
prepare)
    set -e
    cargo build --release --example bench_gpu --example bench_gpu_fallback
    mkdir -p "$here"
    cp target/release/examples/bench_gpu target/release/examples/bench_gpu_fallback "$here"/
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)" >"$here/commit"
    if ! ls "$here"/libvulkan1_*.deb >/dev/null 2>&1; then
        # The amd64 loader package, whatever this machine's architecture.
        lists=$(mktemp -d)
        mkdir -p "$lists/partial"
        o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
        apt-get $o update >/dev/null
        (cd "$here" && apt-get $o download libvulkan1)
    fi
    ls -la "$here"
    ;;
run)
    out="${2:-}"
    start=$(date +%s)
    for f in "$here"/*.deb; do dpkg -x "$f" /; done
    ldconfig
    icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    if [ -f "$icd" ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
        export VK_DRIVER_FILES=$icd
    fi
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true
    echo "binaries of commit $(cat "$here/commit" 2>/dev/null || echo unknown), run $(date -u +%FT%TZ)"
    adapter=()
    if command -v nvidia-smi >/dev/null; then adapter=(--adapter NVIDIA); fi
    rows=$(mktemp)
    bench() { # seconds, then the command
        local limit=$1
        shift
        timeout "$limit" "$@" | tee -a "$rows"
        local rc=${PIPESTATUS[0]}
        [ "$rc" = 0 ] || echo "# $* ended with status $rc after at most ${limit}s"
    }
    # A few seconds of untimed work first: the first rows of a run on a cold GPU came out slow
    # (drop_box_5^3 6.7 ms at 10 sweeps against 4.7 ms for a larger cube at 20 right after).
    timeout 30 "$here/bench_gpu" "${adapter[@]}" --only drop_box_12^3 --frames 60 >/dev/null 2>&1
    # Small scenes first (the per-dispatch cost), then the large boxes (throughput), then the
    # contact scenes and the device's fallback.
    bench 60 "$here/bench_gpu" --json "${adapter[@]}" --only drop_box_5^3 --only drop_box_12^3 --only drop_box_6^3
    bench 90 "$here/bench_gpu" --json "${adapter[@]}" --only drop_box_26^3 --only drop_box_55^3 --only drop_box_60^3
    bench 60 "$here/bench_gpu" --json "${adapter[@]}" --only stack_soft_cubes --only cloth_100x100
    bench 120 "$here/bench_gpu_fallback" --json "${adapter[@]}"
    # Where the time goes, kernel by kernel (`gpu_profile` rows; timestamps between dispatches
    # add a little to each).
    bench 60 "$here/bench_gpu" --json "${adapter[@]}" --profile --frames 10 \
        --only drop_box_6^3 --only drop_box_55^3 --only stack_soft_cubes
    echo "# run took $(($(date +%s) - start)) s"
    if [ -n "$out" ]; then cp "$rows" "$out/rows.jsonl"; fi
    ;;
*)
    echo "usage: $0 prepare | run [OUT]" >&2
    exit 2
    ;;
esac
