#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/project/src
echo 'birch 112' > /app/project/birch.txt
echo 'garnet 779' > /app/project/garnet.txt
echo 'onyx 395' > /app/project/onyx.txt
echo 'lumen 297' > /app/project/lumen.txt
echo 'int main(void) { return 0; }' > /app/project/src/main.c
