#!/bin/bash
set -e
sed -i 's/for i in range(1, len(values)):/for i in range(len(values)):/' /app/stats.py
