#!/bin/bash
# An idle model under a real memory-cgroup squeeze (issue 21, Done-when 3): `ebb serve` with a
# model loaded from its cache entry runs in a child memory cgroup with a limit; after one request
# the model is idle; a second process in the same cgroup then allocates until the cgroup is
# within 5 % of its limit. With memory.release_weights_on_pressure (the default) ebb releases the
# idle model's weights and logs why. Prints the weights figures before and after, and the log line.
#
#   bench/pressure_squeeze.sh [MODEL_DIR] [LIMIT_MIB]
#
# Needs a writable cgroup (v1 memory controller or v2 with memory delegated), i.e. usually root;
# says so and exits 0 otherwise. Runs $EBB, else build/release's ebb when built, else build/debug's.
set -u
cd "$(dirname "$0")/.."
EBB=${EBB:-build/release/src/cli/ebb}
[ -x "$EBB" ] || EBB=build/debug/src/cli/ebb
MODEL=${1:-build/debug/test-models/llama-small-int4}
LIMIT_MIB=${2:-1200}
PORT=${PORT:-18555}
if grep -q '^0::' /proc/self/cgroup && [ -f "/sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3)/memory.current" ]; then
  PARENT=/sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3); V2=1
else
  PARENT=/sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3); V2=0
fi
CG=$PARENT/ebb-squeeze-$$
if ! mkdir "$CG" 2>/dev/null; then
  echo "skipped: cannot create a memory cgroup under $PARENT (needs root or a delegated cgroup)"
  exit 0
fi
trap 'kill $SP 2>/dev/null; wait 2>/dev/null; rmdir "$CG" 2>/dev/null' EXIT
if [ $V2 = 1 ]; then echo $((LIMIT_MIB << 20)) > "$CG/memory.high"; usage() { cat "$CG/memory.current"; }
else echo $((LIMIT_MIB << 20)) > "$CG/memory.limit_in_bytes"; usage() { cat "$CG/memory.usage_in_bytes"; }; fi
export EBB_MODEL_CACHE_DIR=${EBB_MODEL_CACHE_DIR:-$(mktemp -d)}
"$EBB" generate "$MODEL" --input-ids 1,2,3 --max-length 6 >/dev/null 2>&1  # builds the entry
LOG=${LOG:-$(mktemp)}
( echo $BASHPID > "$CG/cgroup.procs"; exec "$EBB" serve --port $PORT --model m="$MODEL" --keep-alive -1 --log-level info ) >"$LOG" 2>&1 &
SP=$!
for _ in $(seq 100); do curl -s localhost:$PORT/health >/dev/null && break; sleep 0.2; done
curl -s localhost:$PORT/v1/completions -H 'Content-Type: application/json' \
  -d '{"model":"m","prompt":"hello","max_tokens":4}' >/dev/null
weights() { curl -s localhost:$PORT/v1/runtime | python3 -c 'import json,sys; print([(m["id"], m["weights"]) for m in json.load(sys.stdin)["models"]])'; }
sleep 2
echo "idle:     cgroup usage $(( $(usage) >> 20 )) MiB of $LIMIT_MIB; $(weights)"
# The squeeze: allocate up to 97 % of the limit in 10 MiB steps, hold it 6 s.
( echo $BASHPID > "$CG/cgroup.procs"; exec python3 -c "
import time
b = []
for _ in range(int($LIMIT_MIB * 0.97) // 10):
    b.append(bytearray(10 << 20)); time.sleep(0.05)
time.sleep(6)" ) &
HP=$!
sleep $(( LIMIT_MIB / 200 + 4 ))
echo "squeezed: cgroup usage $(( $(usage) >> 20 )) MiB of $LIMIT_MIB; $(weights)"
wait $HP
grep -E "memory pressure on|under memory pressure" "$LOG" | sed "s/^\[[^]]*\] \[ebb\] //"
