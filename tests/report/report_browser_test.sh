#!/usr/bin/env bash
# The HTML report in a real browser: makes reports with `shardwise plan --report`,
# checks they fetch nothing, opens them in headless Chromium (Debian's package,
# installed by ./test.sh), takes PNG screenshots, fails on any console message,
# and measures every chart's laid-out size, data marks, ticks, axis labels and
# legend from inside the page. Two negative controls prove each check can fail.
# Usage: report_browser_test.sh SHARDWISE_BINARY OUT_DIR
set -uo pipefail
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"

# self-contained: nothing that could fetch (scripts, src/href, imports, external url())
check_self_contained() {
  local f=$1
  if grep -Eq '<script|<link|<img|<iframe|src=|href=|@import' "$f" || grep -Eo 'url\([^#)]' "$f" | grep -q .; then
    return 1
  fi
  return 0
}

# console messages (errors, CSP violations, failed loads) are logged as ":CONSOLE"
check_console() { ! grep -q ':CONSOLE' "$1"; }

# a copy of a report with the probe script appended and the CSP (which forbids scripts) removed
probe() {  # probe REPORT NAME [CHART_IDS] [NOWRAP] -> prints the chart lines
  local report=$1 name=$2 charts=${3:-} nowrap=${4:-}
  { sed -e 's#<meta http-equiv="Content-Security-Policy"[^>]*>##' -e 's#</body></html>$##' "$report"
    echo '<script>'
    [ -n "$charts" ] && echo "window.PROBE_EXPECTED = [\"${charts// /\", \"}\"];"
    [ -n "$nowrap" ] && echo "window.PROBE_NOWRAP = true;"
    cat "$here/probe.js"
    echo '</script></body></html>'; } >"$out/$name.probe.html"
  browser "$out/$name.probe" --window-size=1000,3000 --dump-dom "file://$out/$name.probe.html" >"$out/$name.dom.html"
  awk '/<pre id="probe-verdict">PROBE-BEGIN/{on=1; next} /PROBE-END/{on=0} on' "$out/$name.dom.html"
}

check_report() {  # check_report NAME REPORT [CHART_IDS] [NOWRAP] (default: plan_html's five charts)
  local name=$1 report=$2 charts=${3:-} nowrap=${4:-}
  local want=5
  [ -n "$charts" ] && want=$(echo "$charts" | wc -w)
  if check_self_contained "$report"; then pass "$name: self-contained (no script, link, src, href, import or external url)"; else
    failed "$name: the report references something outside itself"; fi
  if browser "$out/$name.shot" --window-size=1000,5600 --screenshot="$out/$name.png" "file://$report" >/dev/null; then
    pass "$name: Chromium rendered it"; else failed "$name: Chromium exited non-zero (see $out/$name.shot.log)"; fi
  local size
  size=$(stat -c %s "$out/$name.png" 2>/dev/null || echo 0)
  if [ "$size" -gt 50000 ]; then pass "$name: screenshot $out/$name.png ($size bytes)"; else failed "$name: screenshot missing or blank ($size bytes)"; fi
  if check_console "$out/$name.shot.log"; then pass "$name: no console messages"; else
    failed "$name: console messages:"; grep ':CONSOLE' "$out/$name.shot.log"; fi
  local lines ok
  lines=$(probe "$report" "$name" "$charts" "$nowrap")
  echo "$lines" | sed 's/^/     /'
  ok=$(echo "$lines" | grep -c '^chart .* OK ')
  if [ "$ok" -eq "$want" ] && ! echo "$lines" | grep -q FAIL; then pass "$name: all $want charts laid out with data, ticks, axis labels and legends"; else
    failed "$name: $ok of $want charts passed"; fi
  if check_console "$out/$name.probe.log"; then pass "$name: probe ran without console messages"; else
    failed "$name: probe console:"; grep ':CONSOLE' "$out/$name.probe.log"; fi
}

# 1. multi-node MoE decode with an SLO, four engines compared
"$bin" plan --model deepseek-v3 --cluster h100x64 --workload decode-16k --kv-dtype fp8 --weights-dtype fp8 --search exact --budget 2000 \
  --compare rw,sa,rl --report "$out/deepseek.html" >"$out/deepseek.txt" || failed "plan deepseek-v3 exited non-zero"
check_report deepseek "$out/deepseek.html"
# 2. single-node dense offline workload (TPOT and TTFT), Megatron as the chosen engine, with annealing beside it
"$bin" plan --model llama-3.1-70b --cluster h100x8 --workload chat-1k-1k --search megatron --compare sa --budget 1000 \
  --report "$out/llama.html" >"$out/llama.txt" || failed "plan llama-3.1-70b exited non-zero"
check_report llama "$out/llama.html"

"$bin" plan --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --mode serve --slo "ttft:p99<=3000,tpot:p90<=40" --search exact --requests 300 \
  --report "$out/serve.html" >"$out/serve.txt" || failed "plan --mode serve exited non-zero"
check_report serve "$out/serve.html" "serve-frontier serve-ttft serve-tpot" nowrap
# the serving report's own checks: each latency on its own axis at the SLO's percentile, the engines
if grep -q '>TTFT p99<' "$out/serve.html" && grep -q '>TPOT p90<' "$out/serve.html" && grep -q 'TPOT p90 SLO' "$out/serve.html"; then
  pass "serve: TTFT and TPOT drawn at their SLOs' percentiles (p99, p90)"; else failed "serve: the SLOs' percentiles are not the ones drawn"; fi
"$bin" plan --model deepseek-v3 --cluster h200x16 --workload chat-1k-1k --mode serve --engine any --slo "ttft:p99<=2000,tpot:p90<=50" \
  --requests 200 --top-k 4 --no-disagg --report "$out/serve-any.html" >"$out/serve-any.txt" || failed "plan --mode serve --engine any exited non-zero"
if grep -q 'Serving engines' "$out/serve-any.html"; then pass "serve-any: the engine section is there"; else failed "serve-any: no engine section"; fi

# negative control 1: a chart with its data removed must fail the probe
sed -e 's#<g class="data" clip-path="url(\#clip-frontier)">.*</g><line class="ref"#<g></g><line class="ref"#' "$out/deepseek.html" >"$out/broken-chart.html"
if probe "$out/broken-chart.html" broken-chart | grep -q 'chart frontier FAIL'; then pass "control: an empty frontier chart is caught"; else
  failed "control: an empty frontier chart was not caught"; fi
# negative control 2: an external image must show up as a console message and fail self-containment
sed -e 's#<section id="summary">#<img src="http://127.0.0.1:9/x.png"><section id="summary">#' "$out/deepseek.html" >"$out/broken-fetch.html"
browser "$out/broken-fetch" --screenshot="$out/broken-fetch.png" "file://$out/broken-fetch.html" >/dev/null
if ! check_console "$out/broken-fetch.log"; then pass "control: a blocked external fetch is logged to the console"; else
  failed "control: a blocked external fetch was not seen"; fi
if ! check_self_contained "$out/broken-fetch.html"; then pass "control: an external reference fails self-containment"; else
  failed "control: an external reference passed self-containment"; fi

echo "report browser test: $failures failure(s); screenshots in $out"
[ "$failures" -eq 0 ]
