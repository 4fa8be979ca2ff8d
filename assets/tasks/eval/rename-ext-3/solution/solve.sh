#!/bin/bash
set -e
cd /app/drafts && for f in *.draft; do mv "$f" "${f%.draft}.md"; done
