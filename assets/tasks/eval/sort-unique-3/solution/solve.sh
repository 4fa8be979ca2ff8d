#!/bin/bash
set -e
sort -u /app/cities.txt > /app/unique_cities.txt
