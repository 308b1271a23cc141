# Sourced by the device scripts (from the repository root): a smaller card emulated on a large
# one. `hold GIB`: another process holds the device's free memory but what keeps every process
# on it (the daemon included, where it already runs) within GIB (sets $holder; nothing is held
# where less than 1 GiB would be), so that an overrun fails instead of using it. `unhold` frees it.
# Held before the daemon starts, the daemon sees GIB; held after a PreloadSRS that made a TEST
# key on the whole device (keygen's transients given back), the daemon keeps what it holds and
# may grow to GIB in all.
holder=
hold() {
    local free_mib used_mib hold_mib
    read -r free_mib used_mib < <(nvidia-smi --query-gpu=memory.free,memory.used --format=csv,noheader,nounits | head -1 | tr -d ,)
    hold_mib=$(( free_mib - ($1 * 1024 - used_mib) ))
    [ "$hold_mib" -gt 1024 ] || return 0
    python3 -c "import cupy as cp, time; x = cp.empty($hold_mib << 20, cp.uint8); print('holding $hold_mib MiB', flush=True); time.sleep(3600)" &
    holder=$!
    sleep 8
    nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv,noheader
}
unhold() { [ -n "$holder" ] && kill "$holder" && wait "$holder" 2>/dev/null; holder=; }
