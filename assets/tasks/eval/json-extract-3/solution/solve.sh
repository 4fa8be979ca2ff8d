#!/bin/bash
set -e
python3 -c "import json; print(json.load(open('/app/config.json'))['deploy']['replicas'])" > /app/value.txt
