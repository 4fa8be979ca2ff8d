#!/bin/bash
set -e
wc -l < /app/birch.log > /app/lines.txt
