#!/bin/bash
# Second device call for issue 12: OOM inside make_graphed_callables' capture, capture into a freed graph's pool.
cd "$(dirname "$0")"
R=/tmp/cases12b; mkdir -p $R/logs
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > $R/versions.txt 2>&1
run() { local name=$1; shift; local t0=$(date +%s.%N); timeout 60 "$@" > $R/logs/$name.log 2>&1; local rc=$?; awk -v n="$name" -v rc=$rc -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%s\trc=%s\t%.1fs\n", n, rc, b-a}' >> $R/summary.tsv; }
run oom_capture_graphed_callables python3 oom_capture_graphed_callables.py
run pool_reuse_after_free python3 pool_reuse_after_free.py
tar -C /tmp -czf $OUT/cases12b.tgz cases12b
cat $R/summary.tsv $R/versions.txt
