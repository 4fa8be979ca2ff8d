#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for word-freq-1: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check script_executable 'test -x /app/topwords.sh'
check top_words_case_1 'printf '\''%s\n'\'' '\''a b a c b a d e a c'\'' > /tmp/text0.txt && test "$(timeout 10 /app/topwords.sh /tmp/text0.txt | sed "s/^ *//")" = "$(printf '\''4 a
2 b'\'')"'
check top_words_case_2 'printf '\''%s\n'\'' '\''to be or not to be that is the question to ask'\'' > /tmp/text1.txt && test "$(timeout 10 /app/topwords.sh /tmp/text1.txt | sed "s/^ *//")" = "$(printf '\''3 to
2 be'\'')"'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
