#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/service/src
echo 'juniper 974' > /app/service/juniper.txt
echo 'zephyr 247' > /app/service/zephyr.txt
echo 'sierra 351' > /app/service/sierra.txt
echo 'yarrow 160' > /app/service/yarrow.txt
echo 'int main(void) { return 0; }' > /app/service/src/main.c
