# Sourced by the device scripts (from the repository root). `guard_host_memory PID FILE`
# samples the host's memory every 2 s into FILE (time, MemAvailable MiB, the largest
# process's RSS MiB and name). Where MemAvailable falls below GUARD_MIB (default 3072), it kills
# PID's process tree and writes why. A daemon that outgrows the host then dies alone, and the
# call still returns its logs. (On 2026-12-05 a 24 GiB PoRep run lost its whole machine and
# returned nothing.) Sets $guard; `unguard` stops the sampling.
guard=
kill_tree() {  # a process and every descendant, children first
    local child
    for child in $(pgrep -P "$1"); do kill_tree "$child"; done
    kill -KILL "$1" 2>/dev/null
}
guard_host_memory() {
    local pid=$1 file=$2 floor=${GUARD_MIB:-3072}
    (
        while kill -0 "$pid" 2>/dev/null; do
            avail=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
            top=$(ps -eo rss=,comm= --sort=-rss | head -1 | awk '{printf "%d %s", $1 / 1024, $2}')
            echo "$(date -u +%H:%M:%S) $avail $top" >>"$file"
            if [ "$avail" -lt "$floor" ]; then
                echo "$(date -u +%H:%M:%S) MemAvailable ${avail} MiB < ${floor} MiB: killing $pid and its children" \
                    | tee -a "$file" >&2
                kill_tree "$pid"
                break
            fi
            sleep 2
        done
    ) &
    guard=$!
}
unguard() { [ -n "$guard" ] && kill "$guard" 2>/dev/null; guard=; }
