"""SHA-256 in a circuit, laid out as bellperson's ``gadgets/sha256.rs``.

Message schedule words w[16..64) are addmany(w[i-16], s0, w[i-7], s1); the rounds defer the
additions for e (h, S1, ch, K, w, d) and a (h, S1, ch, K, w, S0, maj) until the word is next
used; the final hash adds the current value. Every addition of one compression shares a
:class:`MultiEq`, flushed at the end of the compression. Bits are big-endian per word, the
message in SHA-256 order.

A shape-only constraint system may provide ``memoized`` (see :mod:`.shape`) to replay the cost
of a compression already synthesized with the same constant/variable input pattern.
"""

from __future__ import annotations

from cuzk_plugin.filecoin.gadgets.boolean import FALSE, TRUE, Boolean
from cuzk_plugin.filecoin.gadgets.uint32 import MultiEq, UInt32

__all__ = ["sha256", "sha256_compression", "sha256_block_no_padding", "IV", "ROUND_CONSTANTS"]

ROUND_CONSTANTS = [
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
]
IV = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]


def _iv() -> list[UInt32]:
    return [UInt32.constant(v) for v in IV]


def _compression(cs, block: list[Boolean], current: list[UInt32]) -> list[UInt32]:
    assert len(block) == 512 and len(current) == 8
    w = [UInt32.from_bits_be(block[i:i + 32]) for i in range(0, 512, 32)]
    meq = MultiEq(cs)
    for i in range(16, 64):
        s0 = w[i - 15].rotr(7).xor(cs, w[i - 15].rotr(18)).xor(cs, w[i - 15].shr(3))
        s1 = w[i - 2].rotr(17).xor(cs, w[i - 2].rotr(19)).xor(cs, w[i - 2].shr(10))
        w.append(UInt32.addmany(cs, meq, [w[i - 16], s0, w[i - 7], s1]))

    # a and e are either a concrete word or a deferred list of operands
    a: UInt32 | list = current[0]
    b, c, d = current[1], current[2], current[3]
    e: UInt32 | list = current[4]
    f, g, h = current[5], current[6], current[7]

    def compute(x, extra):
        if isinstance(x, UInt32):
            return x
        return UInt32.addmany(cs, meq, x + extra)

    for i in range(64):
        new_e = compute(e, [])
        s1 = new_e.rotr(6).xor(cs, new_e.rotr(11)).xor(cs, new_e.rotr(25))
        ch = UInt32.sha256_ch(cs, new_e, f, g)
        temp1 = [h, s1, ch, UInt32.constant(ROUND_CONSTANTS[i]), w[i]]
        new_a = compute(a, [])
        s0 = new_a.rotr(2).xor(cs, new_a.rotr(13)).xor(cs, new_a.rotr(22))
        maj = UInt32.sha256_maj(cs, new_a, b, c)
        h, g, f = g, f, new_e
        e = [*temp1, d]
        d, c, b = c, b, new_a
        a = [*temp1, s0, maj]

    out = [
        compute(a, [current[0]]),
        UInt32.addmany(cs, meq, [current[1], b]),
        UInt32.addmany(cs, meq, [current[2], c]),
        UInt32.addmany(cs, meq, [current[3], d]),
        compute(e, [current[4]]),
        UInt32.addmany(cs, meq, [current[5], f]),
        UInt32.addmany(cs, meq, [current[6], g]),
        UInt32.addmany(cs, meq, [current[7], h]),
    ]
    meq.flush()
    return out


def _word(bits_le: list[Boolean]) -> UInt32:
    value = 0
    for i, b in enumerate(bits_le):
        if b.value is None:
            return UInt32(bits_le, None)
        value |= b.value << i
    return UInt32(bits_le, value)


def sha256_compression(cs, block: list[Boolean], current: list[UInt32]) -> list[UInt32]:
    """One compression of a 512-bit block (big-endian bits) into the 8-word state."""
    memoized = getattr(cs, "memoized", None)
    if memoized is None:
        return _compression(cs, block, current)

    def run(inner_cs, flat):
        words = [_word(flat[512 + 32 * k:512 + 32 * (k + 1)]) for k in range(8)]
        return [bit for word in _compression(inner_cs, flat[:512], words) for bit in word.bits]

    flat = list(block) + [bit for word in current for bit in word.bits]
    out = memoized("sha256_compression", run, flat)
    return [_word(out[32 * k:32 * (k + 1)]) for k in range(8)]


def sha256_block_no_padding(cs, block: list[Boolean]) -> list[Boolean]:
    """One compression from the IV, digest bits big-endian."""
    return [bit for word in sha256_compression(cs, block, _iv()) for bit in word.into_bits_be()]


def sha256(cs, message: list[Boolean]) -> list[Boolean]:
    """SHA-256 of a whole number of bytes (big-endian bits), padding with constant bits."""
    assert len(message) % 8 == 0
    length = len(message)
    padded = [*message, TRUE]
    while (len(padded) + 64) % 512:
        padded.append(FALSE)
    padded.extend(TRUE if (length >> i) & 1 else FALSE for i in range(63, -1, -1))
    state = _iv()
    for start in range(0, len(padded), 512):
        state = sha256_compression(cs, padded[start:start + 512], state)
    return [bit for word in state for bit in word.into_bits_be()]
