#!/bin/bash
set -e
wc -l < /app/quartz.log > /app/lines.txt
