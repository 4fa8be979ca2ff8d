#!/bin/bash
set -e
awk -F, 'NR>1 {s+=$3} END {print s}' /app/orders.csv > /app/sum.txt
