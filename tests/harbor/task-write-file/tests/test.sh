#!/bin/bash
# Reward 1 when /app/greeting.txt holds exactly the line asked for, else 0.
if [ "$(cat /app/greeting.txt 2>/dev/null; echo x)" = "$(printf 'hello from paddock\nx')" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "greeting.txt is missing or differs:"; cat -A /app/greeting.txt 2>&1
  echo 0 > /logs/verifier/reward.txt
fi
