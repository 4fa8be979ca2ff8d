#!/bin/bash
set -e
tar -czf /app/service-archive.tar.gz -C /app service
