#!/bin/bash
cd /app
python3 -m http.server 8765 --bind 127.0.0.1 &
server=$!
for _ in $(seq 50); do
  python3 -c 'import urllib.request as u; open("answer.txt", "wb").write(u.urlopen("http://127.0.0.1:8765/message.txt").read())' 2>/dev/null && break
  sleep 0.1
done
kill "$server"
wait "$server"
