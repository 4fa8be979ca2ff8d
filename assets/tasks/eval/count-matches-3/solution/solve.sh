#!/bin/bash
set -e
grep -cw TIMEOUT /app/worker.log > /app/matches.txt
