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
check no_txt_left 'test -z "$(find /app/notes -name '\''*.txt'\'')"'
check all_md_present 'test -f /app/notes/garnet.md && test -f /app/notes/sierra.md && test -f /app/notes/violet.md && test -f /app/notes/nectar.md && test -f /app/notes/zephyr.md'
check contents_kept 'test "$(cat /app/notes/garnet.md)" = '\''garnet note'\'' && test "$(cat /app/notes/sierra.md)" = '\''sierra note'\'' && test "$(cat /app/notes/violet.md)" = '\''violet note'\'' && test "$(cat /app/notes/nectar.md)" = '\''nectar note'\'' && test "$(cat /app/notes/zephyr.md)" = '\''zephyr note'\'''
check other_files_untouched 'test -f /app/notes/readme.rst'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
