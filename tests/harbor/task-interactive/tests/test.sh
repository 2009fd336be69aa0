#!/bin/bash
# Reward 1 when quiz.py wrote /app/result.txt (it does only when both answers were right), else 0.
if [ "$(cat /app/result.txt 2>/dev/null; echo x)" = "$(printf 'both answers right\nx')" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "result.txt is missing or differs:"; cat -A /app/result.txt 2>&1
  echo 0 > /logs/verifier/reward.txt
fi
