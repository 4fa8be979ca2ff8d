#!/bin/bash
set -e
cd /app/repo && git show "$(git reflog --format=%H | sed -n 2p)":ember.md > /app/recovered.txt
