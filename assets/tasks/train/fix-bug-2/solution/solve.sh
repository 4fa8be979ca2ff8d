#!/bin/bash
set -e
sed -i 's/print(total \/\/ len(values))/print(total \/ len(values))/' /app/mean.py
