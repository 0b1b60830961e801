"""CPython workload for comparing sampo's native symbols with perf's (bench/symbols/run.sh).

Spends its time in json, re, hashlib and sorting, so that CPython's own functions, libc's
(memmove, malloc internals, qsort-free string work) and OpenSSL's/libz's are all hot.
usage: python3 cpython_workload.py [ROUNDS]   (default 300, about 5 s; the same work every run)
"""
import hashlib
import json
import random
import re
import sys


def work_json(rng):
    doc = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(rng.random())],
            "nested": {"x": rng.random(), "y": [rng.randint(0, 99) for _ in range(8)]}}
           for i in range(300)]
    text = json.dumps(doc)
    back = json.loads(text)
    return len(text) + len(back)


WORD = re.compile(r"\b([a-z]+)(\d+)\b")
MAIL = re.compile(r"[\w.]+@[\w.]+\.(?:com|org|net)")


def work_re(rng):
    text = " ".join("%s%d user%d@host%d.org" % ("word" * (i % 3 + 1), i, i, rng.randint(0, 9))
                    for i in range(400))
    return len(WORD.findall(text)) + len(MAIL.findall(text)) + len(WORD.sub(r"\2\1", text))


def work_hash(rng):
    data = bytes(rng.getrandbits(8) for _ in range(4096)) * 16
    total = 0
    for algo in ("sha256", "md5", "sha1", "blake2b"):
        total += hashlib.new(algo, data).digest()[0]
    return total


def work_sort(rng):
    nums = [rng.random() for _ in range(20000)]
    words = ["%x" % rng.getrandbits(40) for _ in range(8000)]
    pairs = [(w, n) for w, n in zip(words, nums)]
    return (sorted(nums)[0] + len(sorted(words)) + len(sorted(pairs, key=lambda p: p[1]))
            + len(sorted(words, key=str.lower)))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = random.Random(42)
    acc = 0
    for _ in range(rounds):
        acc += work_json(rng) + work_re(rng) + work_hash(rng) + int(work_sort(rng))
    print("rounds %d checksum %d" % (rounds, acc % 1000003))


if __name__ == "__main__":
    main()
