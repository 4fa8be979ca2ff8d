#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/website/src
echo 'zephyr 428' > /app/website/zephyr.txt
echo 'violet 4' > /app/website/violet.txt
echo 'ember 15' > /app/website/ember.txt
echo 'xenon 470' > /app/website/xenon.txt
echo 'int main(void) { return 0; }' > /app/website/src/main.c
