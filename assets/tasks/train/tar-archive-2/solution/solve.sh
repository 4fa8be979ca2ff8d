#!/bin/bash
set -e
tar -czf /app/backup.tar.gz -C /app project
