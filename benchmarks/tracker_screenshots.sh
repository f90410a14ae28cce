#!/usr/bin/env bash
# What a user sees in TensorBoard and MLflow after `hardcse art run --report-to tensorboard mlflow` (issue 44):
# the ART smoke run on the bundled models (~5 min on 2 cores), then TensorBoard and the MLflow UI served locally
# and photographed by a headless Chromium (Debian's `chromium` package). Writes docs/images/tensorboard-art-run.png
# (reward parts, KL, the in-run STS-B dev score, the rounds' STS-B dev), tensorboard-completions.png (the RL
# completions table) and mlflow-art-run.png (the folder's run, its nested training runs, its metrics).
#
#     bash benchmarks/tracker_screenshots.sh [RUNS]     # RUNS: a scratch folder (default runs/tracker-screenshots)
set -eu
runs=${1:-runs/tracker-screenshots}
out=docs/images
mkdir -p "$out"
rm -rf "$runs"
.venv/bin/hardcse art run --config smoke --out "$runs/tracking-demo" --report-to tensorboard mlflow
shoot() {  # URL FILE: a 1600-pixel-wide page after its scripts ran (60 s of virtual time)
  timeout 150 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,"${3:-1100}" \
    --virtual-time-budget=60000 --screenshot="$2" "$1" 2>/dev/null
}
.venv/bin/tensorboard --logdir "$runs/tracking-demo/tensorboard" --port 6006 > "$runs/tensorboard.log" 2>&1 &
board=$!
.venv/bin/mlflow ui --backend-store-uri "sqlite:///$PWD/$runs/mlflow.db" --port 5000 > "$runs/mlflow.log" 2>&1 &
ui=$!
trap 'kill $board $ui 2>/dev/null || true; pkill -f "mlflow.server" || true' EXIT
sleep 15
filter='rl%2F(reward%7Cr1%7Cr2%7Ckl)%24%7Csts-dev_spearman%7Crounds%2Feval%2Fscores%2FSTS-B-dev'
shoot "http://localhost:6006/?darkMode=false#scalars&tagFilter=$filter&_smoothingWeight=0" "$out/tensorboard-art-run.png"
shoot "http://localhost:6006/?darkMode=false#text&tagFilter=completions" "$out/tensorboard-completions.png" 1000
run_id=$(.venv/bin/python -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
    \"select run_uuid from runs where name = 'tracking-demo'\").fetchone()[0])" "$runs/mlflow.db")
shoot "http://localhost:5000/#/experiments/1/runs/$run_id" "$out/mlflow-art-run.png"
ls -la "$out"
