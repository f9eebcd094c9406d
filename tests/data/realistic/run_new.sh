#!/bin/bash
# Runs every program under programs_new/ on one GPU (device kind nvidia-h200), from the repo root:
#   bash tests/data/realistic/run_new.sh          (optionally ONLY="r01_moe_router r01_moe_router_clean")
# Programs run JOBS at a time (default 6), each under `timeout 120` in its own working directory
# /tmp/runnew_NAME with its own inductor cache.
# Output: $OUT/logs/NAME.log (combined stdout+stderr, nothing added), $OUT/summary.tsv
# (program, exit code, seconds, MATCH/MISMATCH/-, last line), $OUT/env.txt; the logs are packed into
# $OUT/logs.tar.gz (the device returns at most 8 files).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
P=$HERE/programs_new
OUT=${OUT:-$HERE/out_local}
LOGS=$OUT/logs
JOBS=${JOBS:-6}
ONLY=${ONLY:-}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1 OMP_NUM_THREADS=2
unset TORCH_SHOW_CPP_STACKTRACES CUDA_LAUNCH_BLOCKING

{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  uname -r
  python3 - <<'PY'
import sys, torch
print("python", sys.version.split()[0])
print("torch", torch.__version__, "| cuda", torch.version.cuda, "| cudnn", torch.backends.cudnn.version(),
      "| gpus", torch.cuda.device_count())
try:
    import tqdm
    print("tqdm", tqdm.__version__)
except ImportError:
    print("tqdm NOT installed")
PY
} > "$OUT/env.txt" 2>&1

run_one() {  # name
  local name=$1 script t0=$SECONDS rc verdict last
  script=$(grep -l "__main__" "$P/$name"/*.py | head -1)
  mkdir -p "/tmp/runnew_$name"
  (cd "/tmp/runnew_$name" && TORCHINDUCTOR_CACHE_DIR=/tmp/indnew_$name timeout 120 python3 "$script") \
    > "$LOGS/$name.log" 2>&1
  rc=$?
  if grep -q "MISMATCH" "$LOGS/$name.log"; then verdict=MISMATCH
  elif grep -q "MATCH" "$LOGS/$name.log"; then verdict=MATCH
  else verdict=-; fi
  last=$(tail -c 4000 "$LOGS/$name.log" | tr '\r' '\n' | grep -v '^[[:space:]]*$' | tail -1 | tr '\t' ' ' | cut -c1-300)
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" $((SECONDS - t0)) "$verdict" "$last" > "$LOGS/.row.$name"
}
export -f run_one
export P LOGS

names=()
for d in "$P"/*/; do
  n=$(basename "$d")
  [ -f "$d/progress.py" ] || continue
  if [ -z "$ONLY" ] || [[ " $ONLY " == *" $n "* ]]; then names+=("$n"); fi
done
printf '%s\n' "${names[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}'

{
  printf 'program\texit_code\tseconds\tresult\tlast_line\n'
  cat "$LOGS"/.row.* 2>/dev/null | sort
} > "$OUT/summary.tsv"
rm -f "$LOGS"/.row.*
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
cat "$OUT/env.txt"
cut -c1-220 "$OUT/summary.tsv"
