#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/mean.py <<'EOF'
import sys


def main(path):
    values = [float(line) for line in open(path) if line.strip()]
    total = 0
    for i in range(len(values)):
        total += values[i]
    print(total // len(values))


if __name__ == "__main__":
    main(sys.argv[1])
EOF
printf '2\n4\n9\n' > /app/sample.txt
