#!/usr/bin/env bash
# The device runs behind benchmarks/RESULTS.md, step by step (each device call is limited to 10 minutes):
#   bash benchmarks/device_run.sh OUT calibrate NAME        roofline calibrate, timed wall to wall -> OUT/NAME.json
#   bash benchmarks/device_run.sh OUT calibrate-compile NAME   the same with --with-compile (a shipped profile's command)
#   bash benchmarks/device_run.sh OUT zoo PROFILE K/N ...    zoo shards (accuracy.py --zoo --kernels) -> OUT/zoo_K.json.gz
#   bash benchmarks/device_run.sh OUT zoo-curves PROFILE K/N ...   the same without the kernel table
#   bash benchmarks/device_run.sh OUT heldout PROFILE K/N ...   the held-out zoo (benchmarks/zoo/heldout.py), curves only -> OUT/heldout_K.json.gz
#   bash benchmarks/device_run.sh OUT fresh PROFILE K/N ...     the third set (heldout.FRESH), curves only -> OUT/fresh_K.json.gz
#   bash benchmarks/device_run.sh OUT fourth PROFILE K/N ...    the fourth set (heldout.FOURTH), curves only -> OUT/fourth_K.json.gz
#   bash benchmarks/device_run.sh OUT fifth PROFILE K/N ...     the fifth set (heldout.FIFTH), curves only -> OUT/fifth_K.json.gz
#   ZOO_UNTIL=EPOCH_S bash benchmarks/device_run.sh ...   zoo steps start no shard after that time
#   bash benchmarks/device_run.sh OUT decode PROFILE         benchmarks/decode_check.py on GPT-2 and a Llama-shaped model
#   bash benchmarks/device_run.sh OUT probes PROFILE         the host probes (benchmarks/zoo/probes.py) -> OUT/probes.json
# Logs go to OUT/log.txt. Then, on any machine: accuracy.py --zoo --merge OUT/zoo_*.json.gz --json RECORD --profile-file PROFILE.
set -u
out=$1; step=$2; shift 2
log=$out/log.txt
export PYTHONUNBUFFERED=1
case $step in
  calibrate|calibrate-compile)
    start=$(date +%s.%N)
    compile=$([ "$step" = calibrate-compile ] && echo --with-compile)
    python -m roofline calibrate --no-progress $compile --output "$out/$1.json" --name "$1" >> "$log" 2>&1
    echo "calibrate wall $(python -c "print(round($(date +%s.%N) - $start, 1))") s, imports included" >> "$log" ;;
  zoo|zoo-curves|heldout|fresh|fourth|fifth)
    profile=$1; shift
    kernels=$([ "$step" = zoo ] && echo --kernels)
    set_flag=$(case $step in heldout) echo --heldout ;; fresh) echo --fresh ;; fourth) echo --fourth ;; fifth) echo --fifth ;; esac)
    prefix=$(case $step in heldout|fresh|fourth|fifth) echo "$step" ;; *) echo zoo ;; esac)
    for shard in "$@"; do
      if [ -n "${ZOO_UNTIL:-}" ] && [ "$(date +%s)" -ge "$ZOO_UNTIL" ]; then echo "== $prefix $shard not started: past ZOO_UNTIL" >> "$log"; continue; fi
      echo "== $prefix $shard $(date +%T)" >> "$log"
      timeout 280 python benchmarks/accuracy.py --zoo --profile "$profile" --shard "$shard" $kernels $set_flag --json "$out/${prefix}_${shard%/*}.json.gz" >> "$log" 2>&1
    done
    echo "== $prefix done $(date +%T)" >> "$log" ;;
  probes)
    timeout 200 python benchmarks/accuracy.py --zoo --probes --profile "$1" --json "$out/probes.json" >> "$log" 2>&1 ;;
  decode)
    timeout 200 python benchmarks/decode_check.py --profile "$1" --json "$out/decode.json" >> "$log" 2>&1 ;;
esac
