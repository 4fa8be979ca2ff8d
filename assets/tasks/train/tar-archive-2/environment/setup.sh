#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/project/src
echo 'zephyr 428' > /app/project/zephyr.txt
echo 'violet 4' > /app/project/violet.txt
echo 'ember 15' > /app/project/ember.txt
echo 'xenon 470' > /app/project/xenon.txt
echo 'int main(void) { return 0; }' > /app/project/src/main.c
