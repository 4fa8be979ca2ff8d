#!/bin/bash
set -e
sort -u /app/guests.txt > /app/guests_sorted.txt
