#!/bin/bash
# The GPU checks of issue 27 in one call (the device machine has torch, Triton and CUDA but no
# Django): the torch and Triton tests on CUDA, then the benchmark; if the benchmark stops on an
# error (not a missed target), again without the fused Triton kernels so that the other rows are still measured.
# Run from the repository root: bash benchmarks/gpu_check.sh
cd "$(dirname "$0")/.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
timeout 200 python3 -m pytest -q -p no:cacheprovider -p no:django --noconftest -c /dev/null --rootdir . \
    tests/evaluation/test_torch_backend.py tests/evaluation/test_triton_kernel.py tests/evaluation/test_prediction_pairs.py 2>&1 | tail -25
set -o pipefail
if ! timeout 300 python3 benchmarks/bench_gpu.py --device cuda "$@" 2>&1 | tee /tmp/gpu_check.log &&
    grep -q Traceback /tmp/gpu_check.log; then  # stopped on an error, not a missed target
    echo "[gpu_check] the benchmark failed: again without the fused kernels"
    timeout 200 python3 -c "
import sys; sys.argv[0] = 'benchmarks/bench_gpu.py'; sys.path.insert(0, 'benchmarks')
from evaluation.stats import torch_backend as tb; tb.FUSED_PAIRED_ON = ()
import bench_gpu; raise SystemExit(bench_gpu.main(['--device', 'cuda', '--no-functions']))"
fi
