#!/usr/bin/env bash
# `make gpu-check` on a GPU machine that reaches no package registry: the packages come from a
# wheelhouse made beforehand (`make wheelhouse` on a machine with an index: torch of the box's
# CUDA build and every other wheel), or from the machine's own python3 where it has them all
# (a CUDA build of torch, numpy, scikit-learn, matplotlib, safetensors, tqdm, pillow, mlxtend).
#
#   REPORT=DIR tools/gpu_check_offline.sh                  # wheelhouse/ when it holds wheels
#   REPORT=DIR WHEELS=DIR tools/gpu_check_offline.sh
#
# Environment:
#   REPORT [runs/gpu-check-report]: where the check's log (gpu-check.txt: the machine, the
#       versions, the preflight, then tools/gpu_check.sh's output and table), status.tsv and a
#       tarball of every paper's log, results.json and report (gpu-check-runs.tgz, data and
#       checkpoints left out) are written: three files, so that a remote runner can bring them
#       back.
#   WHEELS [wheelhouse, when it holds wheels]: a wheelhouse (make wheelhouse); `make install
#       OFFLINE=1` builds .venv from it alone (pip --no-index --find-links) and the check runs
#       there. Without one the machine's python3 runs paperzoo from src/.
#   Everything else (SYNTH [1 here], DATA_ROOT, PAPERS, BUDGET, DEVICE, ...) is passed on to
#       tools/gpu_check.sh, whose header says what each does. Its OUT is CHECK_OUT
#       [runs/gpu-check], never OUT, which a remote runner may use for REPORT.
# Before any data are written, in this order, each stopping the check with one line (exit 2):
#   1. tools/preflight.py, one line per check in a few seconds: Python and torch against the
#      floors in pyproject.toml, CUDA and its devices, free space in /dev/shm against what the
#      papers' loader workers hold there, disk space, the data the check needs;
#   2. every module the package imports (each third-party module named in an import of
#      src/paperzoo, the lazy ones inside functions included; not those inside a try that
#      catches their failure, such as triton) is imported; one that fails is named.
# So a lease is not spent on synthetic data for a check that cannot run.
# Exit status: tools/gpu_check.sh's (2: the install, the preflight or the import check failed).
set -u
cd "$(dirname "$0")/.."
REPORT=${REPORT:-runs/gpu-check-report}
mkdir -p "$REPORT"
log=$REPORT/gpu-check.txt
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cpus $(nproc)"
} >"$log" 2>&1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
if [[ -z ${WHEELS+x} ]] && compgen -G 'wheelhouse/*.whl' >/dev/null; then WHEELS=wheelhouse; fi
py=$(command -v python3)
if [[ -n ${WHEELS:-} ]]; then
  compgen -G "$WHEELS/*.whl" >/dev/null \
    || { echo "gpu-check-offline: WHEELS=$WHEELS holds no wheels (make wheelhouse)" >&2; exit 2; }
  make install OFFLINE=1 WHEELS="$WHEELS" PY=python3 >>"$log" 2>&1 \
    || { echo "gpu-check-offline: make install from the wheelhouse $WHEELS failed (see $log)" >&2; exit 2; }
  py=$PWD/.venv/bin/python
fi
"$py" -c "import sys, torch, numpy, sklearn; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device', 'numpy', numpy.__version__, 'scikit-learn', sklearn.__version__)" >>"$log" 2>/dev/null \
  || echo "versions: not all of torch, numpy, scikit-learn import (the preflight and the import check say which)" >>"$log"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
check_out=${CHECK_OUT:-runs/gpu-check}  # not $OUT: a remote runner may use that name for REPORT
# the preflight: one line each, the first failure ends the check (its line on stderr and in the log)
where=(--synth "$check_out/data")
[[ ${SYNTH:-1} == 1 ]] || where=()
[[ -n ${DATA_ROOT:-} ]] && where=(--data-root "$DATA_ROOT")
"$py" tools/preflight.py --device "$([[ ${DEVICE:-cuda} == cuda* ]] && echo cuda || echo cpu)" \
  --scale "${SCALE:-full}" --papers "${PAPERS:-}" --out "$check_out" "${where[@]}" \
  2>"$bin/preflight.err" | tee -a "$log"
if [[ ${PIPESTATUS[0]} -ne 0 ]]; then tee -a "$log" <"$bin/preflight.err" >&2; exit 2; fi
# every third-party module src/paperzoo imports, imported here: one line naming what is missing
missing=$("$py" - src/paperzoo <<'PY' 2>>"$log"
import ast, importlib, sys
from pathlib import Path

def optional(tree):
    """Imports inside a try whose handler catches a failed import: the code runs without them."""
    names = {"ImportError", "ModuleNotFoundError", "Exception"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            h.type is None or any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(h.type))
            for h in node.handlers
        ):
            yield from (id(n) for stmt in node.body for n in ast.walk(stmt))

found = set()
for path in sorted(Path(sys.argv[1]).rglob("*.py")):
    tree = ast.parse(path.read_text(), str(path))
    skip = set(optional(tree))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
third_party = sorted(found - set(sys.stdlib_module_names) - {"paperzoo", "__future__"})
missing = []
for name in third_party:
    try:
        importlib.import_module(name)
    except Exception as err:  # a missing module, or one that fails to import
        print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
        missing.append(name)
print(" ".join(missing))
PY
) || missing="(the import check itself failed; see $log)"
if [[ -n $missing ]]; then
  echo "gpu-check-offline: missing module(s) the reproductions import: $missing (bring them as wheels: WHEELS=DIR; details in $log)" >&2
  exit 2
fi
# tools/gpu_check.sh calls BIN/python and BIN/paperzoo
printf '#!/bin/sh\nexec %s "$@"\n' "$py" >"$bin/python"
printf '#!/bin/sh\nexec %s -m paperzoo "$@"\n' "$py" >"$bin/paperzoo"
chmod +x "$bin/python" "$bin/paperzoo"
SYNTH=${SYNTH:-1} BIN=$bin OUT=$check_out tools/gpu_check.sh 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
cp "$check_out/status.tsv" "$REPORT"/ 2>/dev/null
tar czf "$REPORT/gpu-check-runs.tgz" -C "$check_out" --exclude=./data --exclude='*.safetensors' . 2>/dev/null
exit "$rc"
