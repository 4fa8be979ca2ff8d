#!/bin/bash
set -e
printf '%s\n' 'yarrow nectar 15' > /app/maple_0.txt
