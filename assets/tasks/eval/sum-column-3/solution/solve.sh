#!/bin/bash
set -e
awk -F, 'NR>1 {s+=$3} END {print s}' /app/stock.csv > /app/sum.txt
