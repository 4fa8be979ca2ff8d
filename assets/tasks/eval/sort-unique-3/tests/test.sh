#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for sort-unique-3: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check output_exists 'test -f /app/unique_cities.txt'
check is_sorted 'LC_ALL=C sort -c /app/unique_cities.txt'
check no_duplicates 'test -z "$(sort /app/unique_cities.txt | uniq -d)"'
check same_names 'test "$(sort -u /app/cities.txt | tr "\n" ,)" = "$(sort -u /app/unique_cities.txt | tr "\n" ,)"'
check has_24_lines 'test "$(grep -c . /app/unique_cities.txt)" -eq 24'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
