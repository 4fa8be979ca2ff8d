#!/bin/bash
set -e
cd /app/docs && for f in *.log; do mv "$f" "${f%.log}.txt"; done
