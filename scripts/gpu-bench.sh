#!/usr/bin/env bash
# The benchmarks, nccl_core against backend nccl in the same job (GPU host,
# after scripts/gpu-test.sh has built the extension).  Results go to
# ${OUT:-out}/bench.tgz; the markdown tables are printed.
set -uo pipefail
source "$(dirname "$0")/gpu-results.sh" bench
# NCCL_CORE_BENCH_WORLDS picks the world sizes (default "2 4");
# NCCL_CORE_BENCH_MIN_BYTES / NCCL_CORE_BENCH_MAX_BYTES bound the main sweep
# (default 8 B .. 1 GiB);
# NCCL_CORE_BENCH_HOST_WORLDS the world sizes of bench/hostpath.py (default "1 2 4");
# NCCL_CORE_BENCH_FAST_BYTES is the fast-path limit of the second sweep
# (default 4 MiB; 0 skips it); NCCL_CORE_BENCH_DEVICE=0 skips bench/device.py.
max_bytes=${NCCL_CORE_BENCH_MAX_BYTES:-1073741824}
min_bytes=${NCCL_CORE_BENCH_MIN_BYTES:-8}
fast_bytes=${NCCL_CORE_BENCH_FAST_BYTES:-4194304}
for n in ${NCCL_CORE_BENCH_WORLDS:-2 4}; do
  [ "$gpus" -ge "$n" ] || continue
  echo "== collectives (defaults), $n GPUs, up to $max_bytes bytes"
  timeout 300 torchrun --nproc-per-node=$n bench/collectives.py --max-bytes "$max_bytes" --min-bytes "$min_bytes" \
    --out "$WORK/collectives-$n" > "$WORK/collectives-$n.log" 2>&1 || echo "collectives $n: exit $?"
  cat "$WORK/collectives-$n/results.md" 2>/dev/null | grep -v "^$" | head -200
  if [ "$fast_bytes" != 0 ]; then
    echo "== fast_path_max_bytes=$fast_bytes, all five collectives up to 8 MiB, $n GPUs"
    NCCL_CORE_FAST_PATH_MAX_BYTES=$fast_bytes timeout 200 torchrun --nproc-per-node=$n \
      bench/collectives.py --max-bytes 8388608 --out "$WORK/fast-$n" \
      > "$WORK/fast-$n.log" 2>&1 || echo "fast $n: exit $?"
    cat "$WORK/fast-$n/results.md" 2>/dev/null | grep -v "^$" | head -120
  fi
  [ "${NCCL_CORE_BENCH_DEVICE:-1}" = 1 ] || continue
  echo "== device all_reduce, $n GPUs"
  timeout 120 torchrun --nproc-per-node=$n bench/device.py --out "$WORK/device-$n" \
    > "$WORK/device-$n.log" 2>&1 || echo "device $n: exit $?"
  cat "$WORK/device-$n/results.md" 2>/dev/null
done
for n in ${NCCL_CORE_BENCH_HOST_WORLDS:-1 2 4}; do
  [ "$gpus" -ge "$n" ] || continue
  echo "== host µs per small all_reduce, layer by layer, $n GPU(s)"
  timeout 120 torchrun --nproc-per-node=$n bench/hostpath.py --out "$WORK/hostpath-$n.json" \
    > "$WORK/hostpath-$n.log" 2>&1 || echo "hostpath $n: exit $?"
  grep "^|\|^world\|^Phases" "$WORK/hostpath-$n.log"
done
[ "${NCCL_CORE_BENCH_RMA:-1}" = 1 ] || exit 0
echo "== rma, 2 GPUs"
timeout 180 torchrun --nproc-per-node=2 bench/rma.py --out "$WORK/rma.json" > "$WORK/rma.log" 2>&1 \
  || echo "rma: exit $?"
tail -20 "$WORK/rma.log"
