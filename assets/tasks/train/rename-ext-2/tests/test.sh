#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for rename-ext-2: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check no_log_left 'test -z "$(find /app/docs -name '\''*.log'\'')"'
check all_txt_present 'test -f /app/docs/garnet.txt && test -f /app/docs/sierra.txt && test -f /app/docs/violet.txt && test -f /app/docs/nectar.txt && test -f /app/docs/zephyr.txt'
check contents_kept 'test "$(cat /app/docs/garnet.txt)" = '\''garnet note'\'' && test "$(cat /app/docs/sierra.txt)" = '\''sierra note'\'' && test "$(cat /app/docs/violet.txt)" = '\''violet note'\'' && test "$(cat /app/docs/nectar.txt)" = '\''nectar note'\'' && test "$(cat /app/docs/zephyr.txt)" = '\''zephyr note'\'''
check other_files_untouched 'test -f /app/docs/readme.rst'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
