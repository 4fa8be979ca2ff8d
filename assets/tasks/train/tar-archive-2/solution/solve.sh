#!/bin/bash
set -e
tar -czf /app/site.tgz -C /app website
