#!/bin/bash
# Reward 1 when /app/answer.txt is /app/message.txt as served and no server is left listening
# on port 8765, else 0.
reward=1
if ! cmp -s /app/answer.txt /app/message.txt; then
  echo "answer.txt is missing or differs from message.txt:"; cat -A /app/answer.txt 2>&1
  reward=0
fi
# bash's /dev/tcp connects only when something listens.
if (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null; then
  echo "a server is still listening on port 8765"
  reward=0
fi
echo "$reward" > /logs/verifier/reward.txt
