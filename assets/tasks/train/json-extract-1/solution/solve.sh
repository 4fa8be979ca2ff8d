#!/bin/bash
set -e
python3 -c "import json; print(json.load(open('/app/config.json'))['server']['port'])" > /app/value.txt
