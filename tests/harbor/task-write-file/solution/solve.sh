#!/bin/bash
printf 'hello from paddock\n' > /app/greeting.txt
