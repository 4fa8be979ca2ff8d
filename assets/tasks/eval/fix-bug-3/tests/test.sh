#!/bin/bash
# TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28
# This file must never appear in training data or runbooks.
# Verifier for fix-bug-3: each check is one CTRF test; reward.txt is 1 only when all pass.
mkdir -p /logs/verifier
pass=0; total=0; items=""
check() {
  total=$((total+1))
  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi
  echo "$st $1"
  items="$items{\"name\":\"$1\",\"status\":\"$st\"},"
}
check program_present 'test -f /app/average.py'
check mean_case_1 'printf '\''10\n37\n31\n60\n5\n27\n'\'' > /tmp/case0.txt && python3 -c '\''import sys; v=float(sys.argv[1]); assert abs(v-28.333333333333332)<1e-6'\'' "$(timeout 10 python3 /app/average.py /tmp/case0.txt)"'
check mean_case_2 'printf '\''17\n25\n42\n17\n58\n'\'' > /tmp/case1.txt && python3 -c '\''import sys; v=float(sys.argv[1]); assert abs(v-31.8)<1e-6'\'' "$(timeout 10 python3 /app/average.py /tmp/case1.txt)"'
check mean_case_3 'printf '\''52\n4\n9\n'\'' > /tmp/case2.txt && python3 -c '\''import sys; v=float(sys.argv[1]); assert abs(v-21.666666666666668)<1e-6'\'' "$(timeout 10 python3 /app/average.py /tmp/case2.txt)"'
printf '{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},"tests":[%s]}}\n' \
  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json
[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
