"""Checks the fq_mul28 probe's host output: r * 2^392 == a * b (mod p), r < 2p."""
import sys

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB


def value(field: str) -> int:
    return sum(int(h, 16) << (28 * i) for i, h in enumerate(field.split(",")))


n = 0
for line in sys.stdin:
    a, b, r = map(value, line.split())
    assert (r << 392) % P == a * b % P, line
    assert r < 2 * P, line
    n += 1
print(f"{n} products ok")
