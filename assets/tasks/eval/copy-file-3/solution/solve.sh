#!/bin/bash
set -e
cp /app/garnet.cfg /app/xenon.cfg
