#!/bin/bash
set -e
grep -cw WARN /app/gateway.log > /app/matches.txt
