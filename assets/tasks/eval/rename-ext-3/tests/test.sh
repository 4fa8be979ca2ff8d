#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for rename-ext-3: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check no_draft_left 'test -z "$(find /app/drafts -name '\''*.draft'\'')"'
check all_md_present 'test -f /app/drafts/maple.md && test -f /app/drafts/sierra.md && test -f /app/drafts/pepper.md && test -f /app/drafts/yarrow.md'
check contents_kept 'test "$(cat /app/drafts/maple.md)" = '\''maple note'\'' && test "$(cat /app/drafts/sierra.md)" = '\''sierra note'\'' && test "$(cat /app/drafts/pepper.md)" = '\''pepper note'\'' && test "$(cat /app/drafts/yarrow.md)" = '\''yarrow note'\'''
check other_files_untouched 'test -f /app/drafts/readme.rst'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
