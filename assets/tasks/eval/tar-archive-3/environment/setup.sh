#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/project/src
echo 'juniper 974' > /app/project/juniper.txt
echo 'zephyr 247' > /app/project/zephyr.txt
echo 'sierra 351' > /app/project/sierra.txt
echo 'yarrow 160' > /app/project/yarrow.txt
echo 'int main(void) { return 0; }' > /app/project/src/main.c
