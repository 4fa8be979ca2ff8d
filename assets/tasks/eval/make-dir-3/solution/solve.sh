#!/bin/bash
set -e
mkdir -p /app/quartz/tundra/nectar
