#!/usr/bin/env bash
# bench/validate_public's command line: --help prints its usage and the default file and exits
# 0 before any work; an unknown flag exits 2 naming it, and prints nothing on stdout (it is
# not read as the CSV's path after the kernel curves); --detail wants a row id.
# usage: validate_public_flags_test.sh VALIDATE_PUBLIC_BINARY
set -u
bin=$1
fail=0
out=$("$bin" --help 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: --help exited $rc"; fail=1; }
grep -q '^usage: validate_public \[--kernel-tables\] \[--matched-load\] \[--load-sweep\] \[--held-out\] \[--detail ID\] \[CSV\]' <<<"$out" || { echo "FAIL: --help printed no usage: $out"; fail=1; }
grep -q 'public-measurements.csv' <<<"$out" || { echo "FAIL: --help does not name the default file: $out"; fail=1; }
grep -q 'data/validation' <<<"$out" || { echo "FAIL: --help does not name the held-out folder: $out"; fail=1; }
stdout=$("$bin" --bogus 2>/dev/null); rc=$?
err=$("$bin" --bogus 2>&1 >/dev/null)
[ "$rc" -eq 2 ] || { echo "FAIL: --bogus exited $rc"; fail=1; }
[ -z "$stdout" ] || { echo "FAIL: --bogus printed on stdout: ${stdout:0:200}"; fail=1; }
grep -q "^validate_public: '--bogus': unknown flag" <<<"$err" || { echo "FAIL: --bogus: $err"; fail=1; }
# --detail takes a row id: a value that is not one, or none, exits 2 naming the flag and the value
for v in x 0 -3 12abc; do
  err=$("$bin" --detail "$v" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: --detail $v exited $rc"; fail=1; }
  grep -q "^validate_public: --detail: '$v': expected a row id" <<<"$err" || { echo "FAIL: --detail $v: $err"; fail=1; }
done
err=$("$bin" --detail 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: --detail without a value exited $rc"; fail=1; }
[ "$fail" -eq 0 ] && echo "validate_public flags: ok"
exit "$fail"
