#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for copy-file-1: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check copy_exists 'test -f /app/ember.cfg'
check copy_identical 'cmp -s /app/umber.cfg /app/ember.cfg'
check a_copy_of_its_own 'test -f /app/ember.cfg && test ! -L /app/ember.cfg && test ! -L /app/umber.cfg && ! test /app/ember.cfg -ef /app/umber.cfg'
check original_kept 'test -f /app/umber.cfg && test ! -L /app/umber.cfg && test "$(cat /app/umber.cfg)" = '\''cobalt 288
willow 663
juniper 145
tundra 692
xenon 454'\'''
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
