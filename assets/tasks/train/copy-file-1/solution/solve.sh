#!/bin/bash
set -e
cp /app/umber.cfg /app/ember.cfg
