# Sourced by the device scripts (from the repository root): a smaller card emulated on a large
# one. `hold GIB`: another process holds all but GIB of the device's free memory (sets $holder;
# nothing is held where less than 1 GiB would be), so that an overrun fails instead of using it.
# `unhold` frees it.
holder=
hold() {
    local free_mib hold_mib
    free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
    hold_mib=$(( free_mib - $1 * 1024 ))
    [ "$hold_mib" -gt 1024 ] || return 0
    python3 -c "import cupy as cp, time; x = cp.empty($hold_mib << 20, cp.uint8); print('holding $hold_mib MiB', flush=True); time.sleep(3600)" &
    holder=$!
    sleep 8
    nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv,noheader
}
unhold() { [ -n "$holder" ] && kill "$holder" && wait "$holder" 2>/dev/null; holder=; }
