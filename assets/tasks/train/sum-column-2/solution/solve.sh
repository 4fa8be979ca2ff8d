#!/bin/bash
set -e
awk -F, 'NR>1 {s+=$4} END {print s}' /app/sales.csv > /app/sum.txt
