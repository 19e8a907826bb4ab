#!/usr/bin/env bash
# make gpu-check: every paper's full config for a few steps on CUDA, and each one's estimate of
# the whole run's time, in one table. Run it on the GPU machine before paying
# for the full runs:
#
#   DATA_ROOT=/data make gpu-check                  # every registered paper, 6 steps each, on CUDA
#   SYNTH=1 make gpu-check                          # no real data: synthetic files, real layouts
#   DEVICE=cpu SCALE=smoke SYNTH=1 tools/gpu_check.sh          # the plumbing, on a CPU
#
# Environment (defaults in brackets):
#   DEVICE [cuda]  SCALE [full]  STEPS [6, paperzoo.cost.GPU_CHECK_STEPS]: `paperzoo reproduce
#       NAME --scale SCALE --max-steps STEPS --device DEVICE`, a fresh --out per paper (an
#       estimate needs every loop to run here; a loop loaded from an earlier run is not timed).
#       The first step of a loop pays for warm-up; the estimate's steady step is the mean of the
#       other 5, so one step slowed by another process moves it a fifth as much.
#   PAPERS [every registered paper, the costliest full run first]: the papers to run, in this
#       order (tools/gpu_check_plan.py lists them from the registry, by their stored price, so
#       that the budget is spent on the costliest first). Every paper listed must run:
#       one that exits non-zero (also exit 2, e.g. its data missing under DATA_ROOT), times out,
#       finds no time left, exits 0 without results.json or without a time estimate, or whose
#       results.json records a divergence (a loss that became NaN) is a FAILURE. Leave a paper
#       out of PAPERS to skip it.
#   DATA_ROOT [none]: passed as --data-root.
#   SYNTH [0]: 1 writes random data in every format a full config reads (tools/synth_data.py:
#       MNIST, CIFAR-10/100, SVHN, the ILSVRC2012 folders, the dSprites archive, the bAbI folds)
#       under OUT/data when DATA_ROOT is unset, and kept there for the next check. Times are
#       rough: ImageNet is 2 + 1 JPEGs per class at its commonest size, 500 x 375.
#   DDP_PAPERS [the papers whose gpu_check says torchrun: ResNet's nets shared out over the GPUs,
#       one per process (`--set data_parallel=true`: its batch split over them instead), the
#       Perceiver's ImageNet training, the disentanglement study's grid over ranks]: the papers
#       trained data-parallel. They always run under `python -m torch.distributed.run
#       --standalone --nproc_per_node=NPROC`, also with one GPU (NPROC=1), so that their NCCL
#       collectives run.
#   NPROC [torch.cuda.device_count() on CUDA, which honours CUDA_VISIBLE_DEVICES; 1 on CPU]
#   TIMEOUT [each paper's own limit on CUDA, 900 s on CPU]: the most one paper may take; when
#       set, every paper gets it.
#   BUDGET [on CUDA the listed papers' limits added, + SYNTH_S = 50 s when the synthetic data
#       is written; 0 = none on CPU]: the most the whole check may take, synthetic data
#       included: each paper gets min(its limit, what is left); a paper with less than 10 s left
#       does not start and fails. Set it lower to spend a fixed time on the costliest papers.
#       A BUDGET you set counts from the script's start; the default one from the end of the
#       preflight (the plan, the GPU count), since it is what the papers may take, so it cuts a
#       paper only after the papers before it (or the data) ran past their own limits. What is
#       left is counted in milliseconds and rounded up to the second: no paper loses a second
#       to the clock's granularity.
#   KILL_GRACE [45]: seconds between a paper's SIGTERM at its limit and SIGKILL; above
#       torchrun's own 30 s, so that torchrun can stop its ranks first. After each paper every
#       process it started that still runs (a rank or loader worker that left its process group
#       included: found by a tag in its environment, GPU_CHECK_TAG) is killed and named in its
#       log, so that no rank holds the GPU into the next paper.
#   PLAN [none]: a file holding tools/gpu_check_plan.py's output, read instead of running it
#       (the papers and their limits, for checks run many times in a row).
#   OUT [runs/gpu-check]  THREADS [1 on CPU, torch's default on CUDA]
#   BIN [.venv/bin]: where python and paperzoo live.
# Exit status: 0 when every paper listed ran, 1 otherwise (2: the check could not start).
#
# Each paper's limit on CUDA is derived (paperzoo.cost.gpu_check_limit, listed with its
# derivation by tools/gpu_check_plan.py STEPS) from its `gpu_check` (paperzoo.experiments.base.
# GpuCheck; a paper that states none gets the default) and its counted price:
#   limit = ceil(plumbing_s + 1.5 x (setup_s + steps_s + loader_s))
#   plumbing_s: the start-up, imports, run directory, report and torchrun launch a GPU run pays
#       too: half the paper's wall seconds in this script's CPU plumbing mode
#       (`DEVICE=cpu SCALE=smoke SYNTH=1 STEPS=2 THREADS=1 nice -n 10 tools/gpu_check.sh`: the
#       plumbing does not depend on the steps),
#       measured once on a 2-core host whose both cores ran other jobs.
#   setup_s, stated (no GPU run of the check yet): CUDA start, reading the full data, building
#       the full models, cuDNN's search, the evaluation cut to 2 batches; its `reason` says what.
#   steps_s, counted: STEPS steps of every planned loop at the priced time of one of the full
#       run's steps (`paperzoo list --json`: gpu_hours x 3600 / steps; the longest of its FLOP,
#       launch, host and loader time), e.g. the Perceiver's STEPS x 3 loops x its priced step.
#   loader_s, counted: the loader's warm-up, once (a capped run's loops share one start of the
#       loader): its first batch decoded by one worker alone (the workers x the count's loader
#       seconds per step; the Perceiver's 16 workers x its priced loader time a step).
#   1.5: the margin for a slower host or GPU and first steps slower than steady ones.
# The summary prints each paper's limit beside its wall time: a paper near its limit is the
# place to measure again (plumbing_s from this script's CPU wall time, setup_s from the GPU's).
set -uo pipefail
cd "$(dirname "$0")/.."
check_start=$(date +%s)
budget_start_ms=$(date +%s%3N)  # a BUDGET set by the user counts from here

DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-full}
STEPS=${STEPS:-6}
SYNTH_S=50  # the allowance for writing the synthetic data (tools/synth_data.py)
OUT=${OUT:-runs/gpu-check}
BIN=${BIN:-.venv/bin}
SYNTH=${SYNTH:-0}
DATA_ROOT=${DATA_ROOT:-}
if [[ $DEVICE == cuda* ]]; then
  TIMEOUT=${TIMEOUT:-}  # empty: each paper's own limit (its gpu_check)
  BUDGET=${BUDGET:-}  # empty: derived below from the listed papers' limits
else
  TIMEOUT=${TIMEOUT:-900}
  BUDGET=${BUDGET:-0}
fi
[[ -x $BIN/paperzoo ]] || { echo "gpu-check: $BIN/paperzoo not found (make install)" >&2; exit 2; }
# every registered paper: name, limit on CUDA, torchrun (1/0), reason (tools/gpu_check_plan.py)
if [[ -n ${PLAN:-} ]]; then
  plan=$(<"$PLAN") || { echo "gpu-check: cannot read PLAN $PLAN" >&2; exit 2; }
else
  [[ $STEPS =~ ^[0-9]+$ ]] || { echo "gpu-check: STEPS must be a whole number, got '$STEPS'" >&2; exit 2; }
  plan=$("$BIN/python" tools/gpu_check_plan.py "$STEPS") || exit 2
fi
PAPERS=${PAPERS:-$(cut -f1 <<<"$plan" | tr '\n' ' ')}
DDP_PAPERS=${DDP_PAPERS:-$(awk -F'\t' '$3 == 1 { printf "%s ", $1 }' <<<"$plan")}
GPUS=0
if [[ $DEVICE == cuda* ]]; then
  # the GPUs this process may use (torch honours CUDA_VISIBLE_DEVICES; nvidia-smi does not)
  GPUS=$("$BIN/python" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
  if ! [[ $GPUS =~ ^[0-9]+$ && $GPUS -ge 1 ]]; then
    echo "gpu-check: torch sees no CUDA device (install a CUDA build: make install TORCH_VERSION=...; or DEVICE=cpu)" >&2
    exit 2
  fi
fi
if [[ -z ${NPROC:-} ]]; then
  NPROC=1
  [[ $GPUS -ge 1 ]] && NPROC=$GPUS
fi
if [[ -z ${THREADS+x} ]]; then
  if [[ $DEVICE == cpu ]]; then THREADS=1; else THREADS=; fi
fi

for v in STEPS TIMEOUT BUDGET NPROC; do
  [[ ($v == TIMEOUT || $v == BUDGET) && -z ${!v} ]] && continue
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "gpu-check: $v must be a whole number, got '${!v}'" >&2; exit 2; }
done
[[ $NPROC -ge 1 ]] || { echo "gpu-check: NPROC must be at least 1, got $NPROC" >&2; exit 2; }
[[ -n ${PAPERS// /} ]] || { echo "gpu-check: PAPERS is empty" >&2; exit 2; }

KILL_GRACE=${KILL_GRACE:-45}
[[ $KILL_GRACE =~ ^[0-9]+$ && $KILL_GRACE -gt 30 ]] \
  || { echo "gpu-check: KILL_GRACE must be a whole number of seconds above torchrun's 30, got '$KILL_GRACE'" >&2; exit 2; }

# the processes (pids) still running whose environment holds GPU_CHECK_TAG=$1
outlived() {
  local env_file pid
  for env_file in /proc/[0-9]*/environ; do
    pid=${env_file#/proc/}
    pid=${pid%/environ}
    [[ $pid == "$$" ]] && continue
    tr '\0' '\n' 2>/dev/null <"$env_file" | grep -qxF "GPU_CHECK_TAG=$1" && printf '%s ' "$pid"
  done
}

# the paper's limit: TIMEOUT when set, else its own (the plan's second column)
limit_of() {
  if [[ -n $TIMEOUT ]]; then echo "$TIMEOUT"; return; fi
  awk -F'\t' -v p="$1" '$1 == p { print $2; exit }' <<<"$plan"
}
for p in $PAPERS; do
  awk -F'\t' -v p="$p" '$1 == p { found = 1 } END { exit !found }' <<<"$plan" \
    || { echo "gpu-check: unknown paper '$p' (paperzoo list names them)" >&2; exit 2; }
done
if [[ -z $BUDGET ]]; then
  # the listed papers' limits added, and the synthetic data's allowance when it is written
  BUDGET=0
  for p in $PAPERS; do BUDGET=$((BUDGET + $(limit_of "$p"))); done
  [[ -z $DATA_ROOT && $SYNTH == 1 ]] && BUDGET=$((BUDGET + SYNTH_S))
  budget_start_ms=$(date +%s%3N)  # what the papers (and the data) may take, from now
fi
if [[ $BUDGET -gt 0 ]]; then
  echo "gpu-check: the check runs $STEPS steps per loop within a budget of ${BUDGET} s"
else
  echo "gpu-check: the check runs $STEPS steps per loop, with no budget"
fi
mkdir -p "$OUT"
if [[ -z $DATA_ROOT && $SYNTH == 1 ]]; then
  DATA_ROOT=$OUT/data
  "$BIN/python" tools/synth_data.py "$DATA_ROOT" || { echo "gpu-check: tools/synth_data.py failed" >&2; exit 2; }
fi

status=$OUT/status.tsv
: >"$status"
for p in $PAPERS; do
  own=$(limit_of "$p")
  limit=$own
  if [[ $BUDGET -gt 0 ]]; then
    # the seconds left, rounded up: BUDGET x 1000 - the milliseconds spent, divided with ceiling
    left=$(((BUDGET * 1000 - ($(date +%s%3N) - budget_start_ms) + 999) / 1000))
    if [[ $left -lt 10 ]]; then
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "-" "budget" "$own" "0" "not started: the check's BUDGET of ${BUDGET} s was spent" >>"$status"
      echo "gpu-check: $p not started (BUDGET ${BUDGET} s spent)"
      continue
    fi
    [[ $left -lt $limit ]] && limit=$left
  fi
  args=(reproduce "$p" --scale "$SCALE" --max-steps "$STEPS" --device "$DEVICE" --out "$OUT/$p" --quiet)
  [[ -n $DATA_ROOT ]] && args+=(--data-root "$DATA_ROOT")
  [[ -n $THREADS ]] && args+=(--threads "$THREADS")
  mode=single
  if [[ " $DDP_PAPERS " == *" $p "* ]]; then
    mode="torchrun x$NPROC"
    cmd=("$BIN/python" -m torch.distributed.run --standalone "--nproc_per_node=$NPROC" -m paperzoo "${args[@]}")
  else
    cmd=("$BIN/paperzoo" "${args[@]}")
  fi
  rm -rf "${OUT:?}/$p"
  echo "gpu-check: $p ($mode, up to ${limit}s$([[ $limit -lt $own ]] && echo " of its ${own}s")): ${cmd[*]}"
  start=$(date +%s)
  # the largest host memory (max RSS) of the run's processes, measured around `timeout`; at its
  # limit the paper gets SIGTERM, then KILL_GRACE s (longer than torchrun's own 30 s for its
  # ranks) before SIGKILL
  tag="$$-$p-$start"
  GPU_CHECK_TAG=$tag "$BIN/python" -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write(f"{kib / 2**20:.1f}\n")
sys.exit(rc)' "$OUT/$p.rss" timeout --kill-after="$KILL_GRACE" "$limit" "${cmd[@]}" >"$OUT/$p.log" 2>&1
  rc=$?
  wall=$(( $(date +%s) - start ))
  # no process of this paper outlives it (a rank or loader worker in a session of its own
  # included): every process whose environment carries its tag is killed
  left=$(outlived "$tag")
  if [[ -n $left ]]; then
    kill -KILL $left 2>/dev/null
    echo "gpu-check: $p left $(wc -w <<<"$left") process(es) running after it ended; killed: $left" | tee -a "$OUT/$p.log"
  fi
  # torchrun exits 1 whatever its ranks did: a rank's exit 2 (e.g. the data refusal) is in its log
  if [[ $rc -eq 1 && $mode != single ]] && grep -q 'exitcode: 2)' "$OUT/$p.log"; then rc=2; fi
  # the line that says why: paperzoo's one-line error, else the last exception, else the last line
  last=$(grep -h '^paperzoo: ' "$OUT/$p.log" | tail -n 1)
  [[ -n $last ]] || last=$(grep -E '^(\[rank[0-9]+\]: )?[A-Za-z_.]*(Error|Exception)\b' "$OUT/$p.log" | grep -v ChildFailedError | tail -n 1)
  [[ -n $last ]] || last=$(grep -v '^\s*$' "$OUT/$p.log" | tail -n 1)
  last=$(printf '%s' "$last" | tr '\t' ' ' | cut -c1-300)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$mode" "$rc" "$limit" "$wall" "$last" >>"$status"
  echo "gpu-check: $p exit $rc after ${wall}s (log: $OUT/$p.log)"
done

"$BIN/python" - "$status" "$OUT" "$DEVICE" "$SCALE" "$STEPS" "${DATA_ROOT:-none}" "$SYNTH" "$check_start" <<'PY'
import json, sys, time
from pathlib import Path

status, out, device, scale, steps, data_root, synth, check_start = sys.argv[1:]

def loops(nodes):
    for n in nodes:
        yield n
        yield from loops(n.get("children", []))

def hms(s):
    s = round(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"

rows, failed, total = [], 0, 0.0
for line in Path(status).read_text().splitlines():
    paper, mode, rc, limit, wall, last = (line.split("\t") + [""] * 6)[:6]
    res, est, note = Path(out) / paper / "results.json", "—", ""
    rss_file = Path(out) / f"{paper}.rss"
    rss = rss_file.read_text().strip() if rss_file.is_file() and rc != "budget" else "—"
    peak, syncs = "—", "—"
    if rc == "0" and res.is_file():
        d = json.loads(res.read_text())
        every = list(loops((d.get("estimate") or {}).get("loops", [])))
        if any("peak_gpu_memory_gib" in n for n in every):
            peak = f"{max(n.get('peak_gpu_memory_gib', 0) for n in every):.1f}"
        if any("step_syncs" in n for n in every):  # on CUDA: the syncs inside the steps
            syncs = str(sum(sum(n.get("step_syncs", {}).values()) for n in every))
        e = d.get("estimate_seconds")
        diverged = sorted({w for c in d.get("claims", []) for w in (c.get("why_not_measured") or [])
                           if "diverged" in w})
        diverged += [f"{k}: {v}" for k, v in (d.get("details", {}).get("diverged") or {}).items()]
        if diverged:
            state, note, failed = "FAILED (diverged)", "; ".join(diverged)[:300], failed + 1
        elif e is None:
            state, note, failed = "FAILED (no estimate)", "a loop ran no step", failed + 1
        else:
            state = "ran"
        if e is not None:
            est, total = hms(e), total + e
    elif rc == "0":
        state, note, failed = "FAILED (0)", "exit 0 without results.json", failed + 1
    elif rc == "budget":
        state, note, failed = "FAILED", last, failed + 1
    elif rc in ("124", "137"):
        state, note, failed = "FAILED (timed out)", f"after {wall} s", failed + 1
    else:
        state, note, failed = f"FAILED ({rc})", last.removeprefix("paperzoo: error: "), failed + 1
    rows.append((paper, mode, state, limit, wall, rss, peak, syncs, est, note))

print()
print(f"gpu-check: --scale {scale} --max-steps {steps} --device {device}, data root {data_root}"
      + (" (synthetic data: times rough, verdicts meaningless)" if synth == "1" and data_root != "none" else ""))
heads = ("paper", "mode", "status", "limit s", "wall s", "max RSS GiB", "peak GPU GiB",
         "step syncs", "estimate h:mm:ss", "note")
widths = [max(len(str(r[i])) for r in [heads, *rows]) for i in range(9)]
for r in [heads, *rows]:
    print("  ".join(str(v).ljust(w) for v, w in zip(r[:9], widths)) + "  " + str(r[9]))
print(f"sum of the estimates that ran: {hms(total)} ({total / 3600:.1f} h)")
print(f"the whole check: {hms(time.time() - int(check_start))}; "
      + (f"{failed} of {len(rows)} papers FAILED" if failed else f"all {len(rows)} papers ran"))
sys.exit(1 if failed else 0)
PY
