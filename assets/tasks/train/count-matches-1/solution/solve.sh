#!/bin/bash
set -e
grep -cw ERROR /app/service.log > /app/matches.txt
