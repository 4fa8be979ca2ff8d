#!/bin/bash
set -e
wc -l < /app/lumen.log > /app/count.txt
