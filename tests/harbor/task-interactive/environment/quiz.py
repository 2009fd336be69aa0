"""Two questions asked on a terminal; `result.txt` only when both answers are right."""

import sys

if not sys.stdin.isatty():
    sys.exit("needs a terminal")

product = input("What is 6 times 7? ")
capital = input("What is the capital of France? ")
if product.strip() == "42" and capital.strip().lower() == "paris":
    with open("result.txt", "w") as result:
        result.write("both answers right\n")
    print("Well done.")
else:
    sys.exit("Wrong.")
