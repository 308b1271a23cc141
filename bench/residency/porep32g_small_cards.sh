#!/bin/bash
# One device call: a 32 GiB PoRep through the daemon at small device limits, from scratch on a
# fresh machine (what call 2 of bench/residency/README.md "2026-12-05 (late night)" ran inline):
# the pre-compiled circuit and a sparse C1 (porep32g_h200.sh PHASE=prep), the porep-32g TEST key
# written as a .params file (PHASE=testkey, about 100 s on an H200; needs a card of 80 GB or more),
# then porep32g_limits.sh at each of LIMITS (default "16 24"; SINGLE_RUNS each, default 2), each
# limit's timing summary printed. The GPU tests run in the prep beside the seal: TEST_K (default
# small_device; empty: the whole suite), under a hold of TEST_LIMIT_GIB (default: none).
# Everything is tarred into $OUT/small-cards.tgz (the device tool returns 8 files at most), also
# when the deadline (DEADLINE_S, default 560) cuts it short.
# Run with carry [".whl", "cuzk_plugin/backends/cuda/build"]: bash bench/residency/porep32g_small_cards.sh
set -u
FINAL=${OUT:-/tmp/out}; O=/tmp/small-cards; rm -rf "$O"; mkdir -p "$O" "$FINAL"
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$O/commit.txt"  # COMMIT: the caller's HEAD (the device's git may lag its tree)
export CUDA_LIB=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
timeout "${DEADLINE_S:-560}" bash -c '
    OUT=$0 PHASE=prep CIRCUITS=porep-32g WITNESS_BENCH=0 CHECK_TIMEOUT=1 TEST_K="${TEST_K-small_device}" \
        TEST_LIMIT_GIB="${TEST_LIMIT_GIB:-}" bash bench/e2e/porep32g_h200.sh >"$0/prep.log" 2>&1; echo "prep rc=$? at $(date -u +%T)"; \
        grep -E "gpu tests rc|passed|failed" "$0/prep.log" | tail -3
    OUT=$0 PHASE=testkey bash bench/e2e/porep32g_h200.sh >"$0/testkey.log" 2>&1; echo "testkey rc=$? at $(date -u +%T)"
    OUT=$0 LIMITS="${LIMITS:-16 24}" SINGLE_RUNS=${SINGLE_RUNS:-2} LIMIT_TIMEOUT=${LIMIT_TIMEOUT:-200} \
        bash bench/residency/porep32g_limits.sh
' "$O"
echo "rc=$?"
tar czf "$FINAL/small-cards.tgz" -C /tmp small-cards
