#!/usr/bin/env bash
# make gpu-check: every paper's full config for a few steps on CUDA, and each one's estimate of
# the whole run's time, in one table (issue 32, item 5). Run it on the GPU machine before paying
# for the full runs:
#
#   DATA_ROOT=/data make gpu-check                  # all ten papers, 3 steps each, on CUDA
#   SYNTH=1 make gpu-check                          # no real data: random MNIST / CIFAR-10 files
#   DEVICE=cpu SCALE=smoke PAPERS=coordconv make gpu-check     # the plumbing, on a CPU
#
# Environment (defaults in brackets):
#   DEVICE [cuda]  SCALE [full]  STEPS [3]: `paperzoo reproduce NAME --scale SCALE
#       --max-steps STEPS --device DEVICE`, a fresh --out per paper (an estimate needs every loop
#       to run here; a loop loaded from an earlier run is not timed).
#   PAPERS [all ten]  DATA_ROOT [none]: passed as --data-root. A paper whose data are missing
#       exits 2 with one line naming the data set and its layout: listed as skipped.
#   SYNTH [0]: 1 writes random data in the real formats and sizes (tools/synth_data.py: MNIST,
#       CIFAR-10) under OUT/data when DATA_ROOT is unset: the times are real, the verdicts not.
#   NPROC [GPUs seen by nvidia-smi; 1 on CPU]: papers the paper trains data-parallel
#       (DDP_PAPERS [resnet perceiver disentanglement]: ResNet's batch split over GPUs, the
#       Perceiver's ImageNet training, the disentanglement study's grid over ranks) run under
#       `python -m torch.distributed.run --standalone --nproc_per_node=NPROC` when NPROC > 1.
#   OUT [runs/gpu-check]  TIMEOUT [900 s per paper]  THREADS [1 on CPU, torch's default on CUDA]
#   BIN [.venv/bin]: where python and paperzoo live.
# Exit status: 0 when no paper failed (skipped ones do not fail the check), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-full}
STEPS=${STEPS:-3}
PAPERS=${PAPERS:-resnet ggnn wrm coordconv obfuscated-gradients path-sgd draw perceiver disentanglement gat}
DDP_PAPERS=${DDP_PAPERS:-resnet perceiver disentanglement}
OUT=${OUT:-runs/gpu-check}
TIMEOUT=${TIMEOUT:-900}
BIN=${BIN:-.venv/bin}
SYNTH=${SYNTH:-0}
DATA_ROOT=${DATA_ROOT:-}
if [[ -z ${NPROC:-} ]]; then
  NPROC=1
  if [[ $DEVICE == cuda* ]] && command -v nvidia-smi >/dev/null; then
    NPROC=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    [[ $NPROC -ge 1 ]] || NPROC=1
  fi
fi
if [[ -z ${THREADS+x} ]]; then
  if [[ $DEVICE == cpu ]]; then THREADS=1; else THREADS=; fi
fi

[[ -x $BIN/paperzoo ]] || { echo "gpu-check: $BIN/paperzoo not found (make install)" >&2; exit 2; }
if [[ $DEVICE == cuda* ]]; then
  if ! "$BIN/python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu-check: torch sees no CUDA device (install a CUDA build: make install TORCH_VERSION=...; or DEVICE=cpu)" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
if [[ -z $DATA_ROOT && $SYNTH == 1 ]]; then
  DATA_ROOT=$OUT/data
  "$BIN/python" tools/synth_data.py "$DATA_ROOT" || exit 2
fi

status=$OUT/status.tsv
: >"$status"
for p in $PAPERS; do
  args=(reproduce "$p" --scale "$SCALE" --max-steps "$STEPS" --device "$DEVICE" --out "$OUT/$p" --quiet)
  [[ -n $DATA_ROOT ]] && args+=(--data-root "$DATA_ROOT")
  [[ -n $THREADS ]] && args+=(--threads "$THREADS")
  mode=single
  if [[ " $DDP_PAPERS " == *" $p "* && $NPROC -gt 1 ]]; then
    mode="torchrun x$NPROC"
    cmd=("$BIN/python" -m torch.distributed.run --standalone "--nproc_per_node=$NPROC" -m paperzoo "${args[@]}")
  else
    cmd=("$BIN/paperzoo" "${args[@]}")
  fi
  rm -rf "${OUT:?}/$p"
  echo "gpu-check: $p ($mode): ${cmd[*]}"
  start=$(date +%s)
  # the largest host memory (max RSS) of the run's processes, measured around `timeout`
  "$BIN/python" -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write(f"{kib / 2**20:.1f}\n")
sys.exit(rc)' "$OUT/$p.rss" timeout "$TIMEOUT" "${cmd[@]}" >"$OUT/$p.log" 2>&1
  rc=$?
  wall=$(( $(date +%s) - start ))
  # torchrun exits 1 whatever its ranks did: a rank's exit 2 (the data refusal) shows in its log
  if [[ $rc -ne 0 && $mode != single ]] && grep -q 'exitcode: 2)' "$OUT/$p.log"; then rc=2; fi
  # the line that says why: paperzoo's one-line error, else the last exception, else the last line
  last=$(grep -h '^paperzoo: ' "$OUT/$p.log" | tail -n 1)
  [[ -n $last ]] || last=$(grep -E '^[A-Za-z_.]*(Error|Exception)\b' "$OUT/$p.log" | grep -v ChildFailedError | tail -n 1)
  [[ -n $last ]] || last=$(grep -v '^\s*$' "$OUT/$p.log" | tail -n 1)
  last=$(printf '%s' "$last" | tr '\t' ' ' | cut -c1-300)
  printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$mode" "$rc" "$wall" "$last" >>"$status"
  echo "gpu-check: $p exit $rc after ${wall}s (log: $OUT/$p.log)"
done

"$BIN/python" - "$status" "$OUT" "$DEVICE" "$SCALE" "$STEPS" "${DATA_ROOT:-none}" "$SYNTH" <<'PY'
import json, sys
from pathlib import Path

status, out, device, scale, steps, data_root, synth = sys.argv[1:]

def hms(s):
    s = round(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"

rows, failed, total = [], 0, 0.0
for line in Path(status).read_text().splitlines():
    paper, mode, rc, wall, last = (line.split("\t") + [""] * 5)[:5]
    res, est, note = Path(out) / paper / "results.json", "—", ""
    rss_file = Path(out) / f"{paper}.rss"
    rss = rss_file.read_text().strip() if rss_file.is_file() else "—"
    if rc == "0" and res.is_file():
        d = json.loads(res.read_text())
        e = d.get("estimate_seconds")
        if e is not None:
            est, total = hms(e), total + e
        else:
            note = "no estimate (a loop ran no step)"
        state = "ran"
    elif rc == "2":
        state, note = "skipped", last.removeprefix("paperzoo: error: ")
    elif rc in ("124", "137"):
        state, note, failed = "timed out", f"after {wall} s", failed + 1
    else:
        state, note, failed = f"FAILED ({rc})", last, failed + 1
    rows.append((paper, mode, state, wall, rss, est, note))

print()
print(f"gpu-check: --scale {scale} --max-steps {steps} --device {device}, data root {data_root}"
      + (" (synthetic: times only)" if synth == "1" and data_root != "none" else ""))
heads = ("paper", "mode", "status", "wall s", "max RSS GiB", "estimate h:mm:ss", "note")
widths = [max(len(str(r[i])) for r in [heads, *rows]) for i in range(6)]
for r in [heads, *rows]:
    print("  ".join(str(v).ljust(w) for v, w in zip(r[:6], widths)) + "  " + str(r[6]))
print(f"sum of the estimates that ran: {hms(total)} ({total / 3600:.1f} h)")
sys.exit(1 if failed else 0)
PY
