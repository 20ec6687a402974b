# Shared by the browser tests (report_browser_test.sh, sweep_browser_test.sh): sourced with
# $out set to the output folder. Finds Debian's Chromium (./test.sh installs it) or fails,
# and defines pass/failed counters and `browser OUT_PREFIX ARGS...`, which runs headless
# Chromium with its stderr (console messages included) in OUT_PREFIX.log.
failures=0
pass() { echo "PASS $*"; }
failed() { echo "FAIL $*"; failures=$((failures + 1)); }

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "FAIL chromium is not installed (./test.sh installs Debian's chromium package)"
  exit 1
fi

browser() {  # browser OUT_PREFIX ARGS... : runs headless Chromium, stderr to OUT_PREFIX.log
  local prefix=$1
  shift
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$out/profile" --enable-logging=stderr --v=0 "$@" 2>"$prefix.log"
}
