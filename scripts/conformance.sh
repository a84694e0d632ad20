#!/usr/bin/env bash
# PyTorch's own distributed suite (torch.testing._internal.distributed.
# distributed_test, shipped in the wheel) against nccl_core and, in the same
# call, against torch's nccl, then the side-by-side count
# (tests/conformance/summary.py).  Needs the extension built (gpu-test.sh
# builds it) and pytest-xdist.  For a GPU host.
#   CONFORMANCE_WORKERS  xdist workers per backend (default 12)
#   CONFORMANCE_WORLD    ranks per test (default 2)
#   CONFORMANCE_BACKENDS which backends, in order (default "nccl_core nccl")
#   CONFORMANCE_PARALLEL 1: run the backends at the same time (default 0)
#   CONFORMANCE_TIMEOUT  seconds per backend, then pytest gets SIGINT and still
#                        writes the results of the tests that ended (0: none)
#   extra arguments go to pytest (e.g. -k test_all_gather)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export WORLD_SIZE=${CONFORMANCE_WORLD:-2} BACKEND=nccl
export DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=${DISTRIBUTED_TESTS_DEFAULT_TIMEOUT:-180}
DEST=${OUT:-out}
mkdir -p "$DEST"
# torch's test utilities need expecttest; a host without a package index can
# bring its wheel in .whl/ (see the device tool's notes).
if ! python3 -c "import expecttest" 2>/dev/null; then
  if ls .whl/expecttest-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/conformance-site .whl/expecttest-*.whl
    export PYTHONPATH=/tmp/conformance-site${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "conformance: torch's test suite needs the expecttest package (pip install expecttest)"; exit 2
  fi
fi
run_one() {
  local backend=$1; shift
  local bound=()
  [ "${CONFORMANCE_TIMEOUT:-0}" != 0 ] && bound=(timeout -s INT -k 60 "$CONFORMANCE_TIMEOUT")
  NCCL_CORE_CONFORMANCE_BACKEND=$backend "${bound[@]}" python3 -m pytest tests/conformance/suite.py \
    -n "${CONFORMANCE_WORKERS:-12}" -q -p no:cacheprovider -o addopts="" \
    --junitxml="$DEST/conformance-$backend.xml" "$@" >"$DEST/conformance-$backend.log" 2>&1
  echo "$backend: $(tail -1 "$DEST/conformance-$backend.log")"
}
t0=$(date +%s)
pids=()
for b in ${CONFORMANCE_BACKENDS:-nccl_core nccl}; do
  if [ "${CONFORMANCE_PARALLEL:-0}" = 1 ]; then
    run_one "$b" "$@" & pids+=($!)
  else
    run_one "$b" "$@"
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
echo "conformance took $(( $(date +%s) - t0 ))s"
if [ -f "$DEST/conformance-nccl.xml" ] && [ -f "$DEST/conformance-nccl_core.xml" ]; then
  python3 -m tests.conformance.summary "$DEST/conformance-nccl.xml" "$DEST/conformance-nccl_core.xml"
fi
