#!/bin/bash
# Runs every case12 program on the device; raw outputs go to $OUT (one tarball + a summary).
cd "$(dirname "$0")"
R=/tmp/cases12; mkdir -p $R/logs $R/strings $R/headers
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi; python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version()); print(torch.cuda.get_device_name(0))'; python3 -c 'import triton, jax; print("triton", triton.__version__, "jax", jax.__version__)'; nvcc --version | tail -2; } > $R/versions.txt 2>&1
SITE=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
for w in driver cublas cudnn nccl cusparse; do timeout 60 python3 status_strings.py "$SITE" $w > $R/strings/$w.tsv 2>&1; done
for h in driver_types.h cuda.h cublas_api.h cufft.h curand.h cusolver_common.h cudnn_graph.h nccl.h cusparse.h; do f=$(find $SITE/nvidia /usr/local/cuda/include /usr/local/cuda/targets /usr/include -name $h -path '*include*' 2>/dev/null | head -1); [ -n "$f" ] && cp "$f" $R/headers/ && echo "$h <- $f" >> $R/headers/SOURCES.txt; done
run() { local name=$1; shift; local t0=$(date +%s.%N); timeout 60 "$@" > $R/logs/$name.log 2>&1; local rc=$?; awk -v n="$name" -v rc=$rc -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%s\trc=%s\t%.1fs\n", n, rc, b-a}' >> $R/summary.tsv; }
run oom_capture_single python3 oom_capture_single.py
run oom_capture_pool python3 oom_capture_pool.py
run oom_capture_cached python3 oom_capture_cached.py
run illegal_address_replay python3 illegal_address_replay.py
run illegal_address_replay.blocking env CUDA_LAUNCH_BLOCKING=1 python3 illegal_address_replay.py
run device_assert_replay python3 device_assert_replay.py
run device_assert_replay.blocking env CUDA_LAUNCH_BLOCKING=1 python3 device_assert_replay.py
run barrier_in_capture python3 barrier_in_capture.py
run nccl_duplicate_gpu env NCCL_DEBUG=WARN timeout 55 torchrun --nproc-per-node 2 nccl_duplicate_gpu.py
run jax_oom env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 jax_oom.py
run illegal_address_coredump env CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory CUDA_COREDUMP_FILE=/tmp/cases12.cudacore python3 illegal_address_replay.py
[ -f /tmp/cases12.cudacore ] && run cudagdb_coredump timeout 60 cuda-gdb -batch -ex 'target cudacore /tmp/cases12.cudacore' -ex 'info cuda kernels' -ex 'bt'
cp $R/summary.tsv $R/versions.txt $OUT/ 2>/dev/null
tar -C /tmp -czf $OUT/cases12.tgz cases12
cat $R/summary.tsv
