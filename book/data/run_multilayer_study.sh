#!/usr/bin/env bash
# The full study of the part "Beyond one layer" (chapter 8), as run for the committed summaries:
# resumable commands, one process (one thread) each. Rerun a lane to resume whatever was
# interrupted (finished models come from the cache, a killed training resumes at its last
# finished epoch, finished reviews and runs are kept). Then: python book/data/make_multilayer_summary.py
#
#   bash book/data/run_multilayer_study.sh A   lane A, in order of priority: the 6 x 6 model,
#        attention against LIME on it (bf16, 200 reviews), the same on the paper's single-layer
#        model, the skip-connection ablation (seeds 42, 43, 44; seed 42 without the skip is the
#        cached paper model), then fp32 LIME on 10 reviews (what bf16 changes)
#   bash book/data/run_multilayer_study.sh B   lane B (a second core, when one is free): the skip
#        ablation's seeds in the reverse order (44, 43, 42) into results/skip_b. Where both lanes
#        reach the same model, the cache's per-model lock makes one wait and then load it.
#   bash book/data/run_multilayer_study.sh S1  the one-epoch architecture screens of the residual
#        family (no LayerNorm, post-LN, pre-LN plus a feed-forward block) into results/ml_screens_a
#   bash book/data/run_multilayer_study.sh S2  the screens of the paper's layer stacked as it is
#        (no residual, no LayerNorm; lr 1e-3 and the paper's 1e-4) into results/ml_screens_b
#   (S1 and S2 are optional and independent: one core each)
set -u
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PY=${PYTHON:-python}
mkdir -p results/logs
stamp() { echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $*"; }
run() {                                    # run <log name> <attnxai args...>
    local log=results/logs/$1.log; shift
    stamp "start: python -m attnxai $* (commit $(git rev-parse HEAD))" | tee -a results/logs/study.log
    local t0=$SECONDS
    $PY -m attnxai "$@" >>"$log" 2>&1
    local rc=$?
    stamp "end rc=$rc after $((SECONDS - t0)) s: python -m attnxai $*" | tee -a results/logs/study.log
    return $rc
}
lane_a() {
    run train_multilayer train --profile multilayer &&
    run lime_multilayer multilayer-lime --profile multilayer --reviews 200 --precision bf16 \
        --out results/ml_lime --no-progress &&
    run lime_paper multilayer-lime --profile paper --reviews 200 --out results/ml_lime_paper \
        --no-progress &&
    run skip skip-ablation --seeds 42,43,44 --out results/skip --no-progress &&
    run lime_multilayer_fp32 multilayer-lime --profile multilayer --reviews 10 --precision fp32 \
        --out results/ml_lime_fp32 --no-progress
}
lane_b() {
    run skip_b skip-ablation --seeds 44,43,42 --out results/skip_b --no-progress
}
screens_a() {
    run screens_a multilayer-screens --screens residual-noLN,post-LN,pre-LN-FFN \
        --out results/ml_screens_a --no-progress
}
screens_b() {
    run screens_b multilayer-screens --screens plain-lr1e-3,plain-lr1e-4 \
        --out results/ml_screens_b --no-progress
}
T0=$SECONDS
lane=${1:-A}
stamp "lane $lane start" | tee -a results/logs/study.log
case $lane in
    A) lane_a ;;
    B) lane_b ;;
    S1) screens_a ;;
    S2) screens_b ;;
    *) echo "usage: $0 A|B|S1|S2" >&2; exit 2 ;;
esac
rc=$?
stamp "lane $lane end rc=$rc, $((SECONDS - T0)) s in all" | tee -a results/logs/study.log
exit $rc
