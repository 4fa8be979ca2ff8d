#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/repo && cd /app/repo
git init -q -b main .
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
echo "# project" > README.md && git add README.md && git commit -qm "initial commit"
echo 'nectar-3436-garnet' > amber.md && git add amber.md && git commit -qm "add amber.md"
git reset -q --hard HEAD~1
