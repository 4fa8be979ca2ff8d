#!/bin/bash
set -e
mkdir -p /app/zephyr/birch/yarrow
