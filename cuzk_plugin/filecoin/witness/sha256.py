"""SHA-256 in the circuit's layout for many messages at once.

Each compression pattern (which of its 512 block and 256 state bits are constant, and their
values) is traced once through the circuit's own gadget
(:func:`cuzk_plugin.filecoin.gadgets.sha256.sha256_compression`) into a :class:`Program`;
its aux variables come out in exactly the gadget's allocation order. A message is described
by a signature (``"I"`` an allocated bit, ``"T"``/``"F"`` a constant) and a bit matrix over
the instances; :func:`sha256_many` pads it as the gadget does and runs its compressions in
turn, each one for every instance at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import numpy as np

from cuzk_plugin.circuit.constraint_system import Variable
from cuzk_plugin.filecoin.gadgets.boolean import Boolean
from cuzk_plugin.filecoin.gadgets.sha256 import IV, sha256_compression
from cuzk_plugin.filecoin.gadgets.uint32 import UInt32
from cuzk_plugin.filecoin.witness.program import Program, Tape, TraceCS, Traced, compile_program

__all__ = ["rbn_signature", "node_hash_signature", "CompressionTemplate", "compression_template", "sha256_signature", "sha256_templates", "sha256_many",
           "Sha256Result"]

_IV_SIG = "".join("T" if (w >> i) & 1 else "F" for w in IV for i in range(32))


@dataclass(frozen=True)
class CompressionTemplate:
    """One compression pattern: ``program`` takes 768 rows (block bits in message order, then
    the state's 8 words, each 32 bits least significant first) and yields the aux variables
    and 256 output state bits in the same word/bit order; ``out_signature`` says which of
    them are constants."""

    signature: str
    program: Program
    out_signature: str


def _word(bits: list[Boolean]) -> UInt32:
    """The word of 32 traced or constant bits. Its value is traced too: a Traced stands in for
    the int, as for the bits (the gadgets only combine values with the operators Traced records)."""
    value: int | Traced = 0
    for i, b in enumerate(bits):
        value |= cast("int | Traced", b.value) << i  # never None: tracing has values
    return UInt32(bits, cast(int, value))


@lru_cache(maxsize=256)
def compression_template(signature: str) -> CompressionTemplate:
    """Trace and compile one compression pattern (768 characters of I/T/F)."""
    if len(signature) != 768:
        raise ValueError(f"a compression signature has 768 characters, got {len(signature)}")
    tape = Tape()
    for k in range(768):  # inputs first, in order, whatever their pattern
        tape.input(k)
    ins = []
    for k, s in enumerate(signature):
        if s == "I":
            # TraceCS's variables are plain ints and the value is traced (see TraceCS, Traced)
            ins.append(Boolean(cast(Variable, -1 - k), False, cast(int, Traced(tape, k))))
        elif s in "TF":
            ins.append(Boolean.constant(s == "T"))
        else:
            raise ValueError(f"signature character {s!r} at {k} (expected I, T or F)")
    cs = TraceCS(tape)
    state = [_word(ins[512 + 32 * w:512 + 32 * (w + 1)]) for w in range(8)]
    out = sha256_compression(cs, ins[:512], state)
    out_bits = [b for word in out for b in word.bits]
    out_sig = "".join(("T" if b.value else "F") if b.var is None else ("N" if b.negated else "I")
                      for b in out_bits)
    if "N" in out_sig:
        raise ValueError("a compression output is a negated bit: not supported by the witness")
    program = compile_program(tape, 768, cs.aux_nodes, [tape.node_of(b.value) for b in out_bits],
                              cs.num_constraints)
    return CompressionTemplate(signature, program, out_sig)


def sha256_signature(message_sig: str) -> str:
    """The padded message's signature: the gadget appends constant padding bits."""
    if len(message_sig) % 8:
        raise ValueError("a SHA-256 message is a whole number of bytes")
    length = len(message_sig)
    pad = "T" + "F" * ((-(length + 1 + 64)) % 512)
    return message_sig + pad + "".join("T" if (length >> i) & 1 else "F" for i in range(63, -1, -1))


def sha256_templates(message_sig: str) -> list[CompressionTemplate]:
    """The compressions of one message pattern, in order (the first from the constant IV)."""
    sig = sha256_signature(message_sig)
    state_sig, out = _IV_SIG, []
    for start in range(0, len(sig), 512):
        tpl = compression_template(sig[start:start + 512] + state_sig)
        out.append(tpl)
        state_sig = tpl.out_signature
    return out


@dataclass
class Sha256Result:
    """``blocks[k]``: for compression k, one (template, instance columns, aux (num_aux, n) 0/1,
    uint8) per distinct template; ``digest`` (256, N): the digest bits, big-endian within each
    word as the gadget returns them."""

    blocks: list[list[tuple[CompressionTemplate, np.ndarray, np.ndarray]]]
    digest: np.ndarray


def sha256_many(message_sigs: list[str], group: np.ndarray, bits: np.ndarray) -> Sha256Result:
    """SHA-256 of N messages of one length; instance i has signature ``message_sigs[group[i]]``.
    ``bits`` (message bits, N) 0/1 (any unsigned dtype); rows at constant positions are not read."""
    chains = [sha256_templates(s) for s in message_sigs]
    if len({len(c) for c in chains}) != 1 or len({len(s) for s in message_sigs}) != 1:
        raise ValueError("sha256_many hashes messages of one length")
    n = bits.shape[1]
    nblocks = len(chains[0])
    padded = np.zeros((512 * nblocks, n), dtype=np.uint8)
    padded[:bits.shape[0]] = bits
    state = np.zeros((256, n), dtype=np.uint8)
    iv = np.array([(w >> i) & 1 for w in IV for i in range(32)], dtype=np.uint8)
    state[:] = iv[:, None]
    blocks = []
    for k in range(nblocks):
        by_template: dict[str, list[int]] = {}
        for g, chain in enumerate(chains):
            by_template.setdefault(chain[k].signature, []).append(g)
        done = []
        new_state = np.empty_like(state)
        for groups in by_template.values():
            tpl = chains[groups[0]][k]
            cols = np.flatnonzero(np.isin(group, groups))
            if cols.size == 0:
                continue
            v = tpl.program.run(np.concatenate([padded[512 * k:512 * (k + 1), cols], state[:, cols]]))
            done.append((tpl, cols, tpl.program.take(v, tpl.program.aux)))
            new_state[:, cols] = tpl.program.take(v, tpl.program.outputs)
        blocks.append(done)
        state = new_state
    digest = state.reshape(8, 32, n)[:, ::-1, :].reshape(256, n)
    return Sha256Result(blocks, digest)


def rbn_signature(n_bits: int) -> str:
    """Signature of reverse_bit_numbering(255 allocated bits): the pad bit lands at 248."""
    assert n_bits == 255
    return "I" * 248 + "F" + "I" * 7


def node_hash_signature() -> str:
    return rbn_signature(255) * 2
