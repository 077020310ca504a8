#!/bin/sh
# The gpu tier, then the host tier, on a GPU host whose own python3 holds CUDA's PyTorch and
# that cannot reach PyPI (tests/gpu/README.md).  Two steps, from the checkout's root:
#
#   tests/gpu/on_device.sh wheels     where pip reaches PyPI: the wheels such a host lacks,
#                                     into .whl/ (ignored through .git/info/exclude)
#   tests/gpu/on_device.sh run [OUT [TIER...]]
#                                     on the GPU host, with .whl/ carried beside the checkout:
#                                     what the host is, the install, then each tier's log and
#                                     JUnit file (TIER: gpu, host; both by default), all
#                                     written to OUT (default $OUT, else /tmp/edgeprof-device)
#
# Written by hand (not a Makefile target) because it installs into a target folder beside an
# interpreter the Makefile's venv is not: the venv holds PyTorch's CPU wheel.  Each tier runs
# under its own `timeout`, so that a whole run fits one 10-minute call with the install
# (`run`'s timeout_s 590).
set -u
PY=${PYTHON:-python3}
PYVER=${PYVER:-3.12}  # the GPU host's python3 (3.12.3 there in 2026-11)
SITE=/tmp/edgeprof-site

wheels() {
    mkdir -p .whl
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
    # What a PyTorch image lacks of edgeprof's dependencies and of the two tiers' own
    # (result.json is validated with jsonschema); --no-deps: each needed one is named.
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl \
        cffi pycparser 'typer>=0.21,<0.29' jsonschema referencing rpds-py \
        jsonschema-specifications
    ls .whl
}

run() {
    out=${1:-${OUT:-/tmp/edgeprof-device}}
    [ $# -gt 0 ] && shift
    tiers=${*:-gpu host}
    mkdir -p "$out"
    {
        echo "== $(date -u +%FT%TZ)"
        uname -a
        echo "cores: $(nproc); cgroup fs: $(stat -fc %T /sys/fs/cgroup)"
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
        "$PY" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
    } >"$out/host.txt" 2>&1
    cat "$out/host.txt"
    {
        rm -rf "$SITE"
        if ls .whl/*.whl >/dev/null 2>&1; then
            "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
        fi
        # edgeprof itself, its native counter reader built there (cffi, from the wheels);
        # the tiers import the checkout's package, so the reader is copied beside it.
        PYTHONPATH=$SITE "$PY" -m pip install -q --no-index --no-deps --no-build-isolation \
            --upgrade --target "$SITE" . &&
            cp "$SITE"/edgeprof/backends/_cgstat*.so edgeprof/backends/ 2>/dev/null
        PYTHONPATH=$SITE "$PY" -c 'import edgeprof.backends.cgroupfs as f; print("native reader:", f.NATIVE_AVAILABLE)'
    } >"$out/install.log" 2>&1
    tail -n 5 "$out/install.log"
    export PYTHONPATH="$SITE" PYTHONUNBUFFERED=1
    for t in $tiers; do
        case $t in
        gpu) tier gpu 180 "$out" tests/gpu tests/host/test_gpu_run.py ;;
        # Not tests/tooling: it sets up a venv with pip, and the GPU host reaches no index.
        host) tier host 300 "$out" tests/host tests/examples ;;
        *) echo "no tier $t (gpu, host)" >&2; return 2 ;;
        esac
    done
}

# tier NAME SECONDS OUT PATH...: one tier's tests under `timeout`, its log and JUnit file in
# OUT; the last lines (pytest's summary) also on standard output.
tier() {
    name=$1 secs=$2 out=$3
    shift 3
    # xunit1: the gpu tier's figures (record_property) are kept only in that JUnit flavour.
    timeout -k 10 "$secs" "$PY" -m pytest -p no:cacheprovider -q -rfEs \
        -o junit_family=xunit1 --junitxml="$out/$name.xml" "$@" >"$out/$name.log" 2>&1
    echo "== $name tier: exit $? (timeout $secs s: 124)"
    tail -n 15 "$out/$name.log"
}

case ${1:-} in
wheels) wheels ;;
run) shift; run "$@" ;;
*) echo "usage: $0 wheels | run [OUT [TIER...]]" >&2; exit 2 ;;
esac
