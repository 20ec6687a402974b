#!/usr/bin/env bash
# The sweep chart (sweep --svg) in a real browser: makes charts of a closed-form and a serving
# sweep, opens each in headless Chromium (Debian's package, installed by ./test.sh), takes a
# PNG screenshot, fails on any console message, and measures from inside the page: a visible
# title, one legend entry per series, no two series drawn alike (colour, glyph, dash), x ticks
# at the counts swept, every mark inside the plot and the data spanning its width. A negative
# control (a legend entry doubled, as the old chart's were) proves the probe can fail.
# Usage: sweep_browser_test.sh SHARDWISE_BINARY OUT_DIR
set -uo pipefail
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"

probe() {  # probe SVG NAME SERIES COUNTS_JSON -> prints the probe's lines
  local svg=$1 name=$2 series=$3 counts=$4
  { echo '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
    sed -e '1{/^<?xml/d}' "$svg"
    echo "<script>window.PROBE_SWEEP = {series: $series, counts: $counts};"
    cat "$here/sweep_probe.js"
    echo '</script></body></html>'; } >"$out/$name.probe.html"
  browser "$out/$name.probe" --window-size=1000,1200 --dump-dom "file://$out/$name.probe.html" >"$out/$name.dom.html"
  awk '/<pre id="probe-verdict">PROBE-BEGIN/{on=1; next} /PROBE-END/{on=0} on' "$out/$name.dom.html"
}

check_chart() {  # check_chart NAME SVG SERIES COUNTS_JSON
  local name=$1 svg=$2 series=$3 counts=$4
  if browser "$out/$name.shot" --window-size=940,620 --screenshot="$out/$name.png" "file://$svg" >/dev/null; then
    pass "$name: Chromium rendered it"; else failed "$name: Chromium exited non-zero (see $out/$name.shot.log)"; fi
  local size
  size=$(stat -c %s "$out/$name.png" 2>/dev/null || echo 0)
  if [ "$size" -gt 15000 ]; then pass "$name: screenshot $out/$name.png ($size bytes)"; else failed "$name: screenshot missing or blank ($size bytes)"; fi
  if ! grep -q ':CONSOLE' "$out/$name.shot.log"; then pass "$name: no console messages"; else
    failed "$name: console messages:"; grep ':CONSOLE' "$out/$name.shot.log"; fi
  local lines
  lines=$(probe "$svg" "$name" "$series" "$counts")
  echo "$lines" | sed 's/^/     /'
  if [ -n "$lines" ] && ! echo "$lines" | grep -q '^FAIL'; then pass "$name: the chart's geometry"; else failed "$name: the chart's geometry"; fi
}

# 1. closed form: 4 GPU types x 3 engines (TensorRT-LLM skipped on AMD), every type priced
printf 'usd_per_gpu_hour: {h100: 3.0, h200: 3.8, b200: 5.0, mi300x: 2.5}\n' >"$out/prices.yaml"
"$bin" sweep --model llama-3.1-70b --gpus h100,h200,b200,mi300x --counts 8,16,32 --engines vllm,sglang,trtllm \
  --prices "$out/prices.yaml" --svg "$out/closed.svg" >"$out/closed.txt" || failed "sweep (closed form) exited non-zero"
if grep -q 'skipped      trtllm on mi300x (8, 16, 32 GPUs): trtllm is built for NVIDIA GPUs only' "$out/closed.txt"; then
  pass "closed: TensorRT-LLM on MI300X skipped with the reason"; else failed "closed: no skip line for trtllm on mi300x"; fi
check_chart closed "$out/closed.svg" 11 '[8, 16, 32]'

# 2. serving: percentile SLOs, one engine per vendor, short simulations
"$bin" sweep --model llama-3.1-8b --gpus h100,mi300x --counts 1,2,4 --engines vllm,trtllm --mode serve \
  --slo "ttft:p99<=2000,tpot:p90<=50" --requests 300 --top-k 4 --prices "$out/prices.yaml" --svg "$out/serve.svg" >"$out/serve.txt" ||
  failed "sweep (serving) exited non-zero"
if grep -q 'TTFT p99   TPOT p90' "$out/serve.txt" && grep -q 'req/s/GPU' "$out/serve.txt"; then
  pass "serve: the table prints serving figures at the SLOs' percentiles"; else failed "serve: no serving columns"; fi
check_chart serve "$out/serve.svg" 3 '[1, 2, 4]'

# negative control: a legend entry doubled must fail the probe
sed -e 's#\(<g class="legend">\)\(<g class="key">[^/]*/>[^/]*/></g><text[^<]*</text>\)#\1\2\2#' "$out/closed.svg" >"$out/doubled.svg"
if probe "$out/doubled.svg" doubled 11 '[8, 16, 32]' | grep -q '^FAIL legend'; then pass "control: a doubled legend entry is caught"; else
  failed "control: a doubled legend entry was not caught"; fi

echo "sweep browser test: $failures failure(s); screenshots in $out"
[ "$failures" -eq 0 ]
