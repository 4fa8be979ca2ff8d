#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/drafts
echo 'maple note' > /app/drafts/maple.draft
echo 'sierra note' > /app/drafts/sierra.draft
echo 'pepper note' > /app/drafts/pepper.draft
echo 'yarrow note' > /app/drafts/yarrow.draft
echo keep > /app/drafts/readme.rst
