#!/bin/bash
# quiz.py wants a terminal: `script` gives it one and types the answers.
cd /app
printf '42\nParis\n' | script -qec 'python3 quiz.py' /dev/null
