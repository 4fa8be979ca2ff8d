#!/bin/bash
set -e
grep -cw DENIED /app/service.log > /app/matches.txt
