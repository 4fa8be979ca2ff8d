#!/bin/bash
set -e
mkdir -p /app/yarrow/nectar/violet
