#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for tar-archive-3: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check archive_exists 'test -f /app/service-archive.tar.gz'
check is_gzip_tar 'tar -tzf /app/service-archive.tar.gz > /dev/null'
check all_files_inside 'tar -tzf /app/service-archive.tar.gz | sed '\''s|^\./||'\'' > /tmp/listing && grep -qx '\''service/juniper.txt'\'' /tmp/listing && grep -qx '\''service/zephyr.txt'\'' /tmp/listing && grep -qx '\''service/sierra.txt'\'' /tmp/listing && grep -qx '\''service/yarrow.txt'\'' /tmp/listing && grep -qx '\''service/src/main.c'\'' /tmp/listing'
check contents_match 'test "$(tar -xzOf /app/service-archive.tar.gz service/juniper.txt)" = '\''juniper 974'\'' && test "$(tar -xzOf /app/service-archive.tar.gz service/zephyr.txt)" = '\''zephyr 247'\'''
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
