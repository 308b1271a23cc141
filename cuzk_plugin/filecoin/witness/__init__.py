"""The witness engine every proof kind's vectorized witness runs on: traced gadget programs
(``program``, ``sha256``), Poseidon on Python ints and in C (``poseidon``, ``poseidon_cpu``),
value encodings (``encoding``), Merkle insertion (``insertion``) and forked processes that write
one partition's aux in place (``forked``). The kinds' witnesses live in their own folders:
``filecoin/porep/witness.py``, ``filecoin/post/witness.py``, ``filecoin/snap/witness.py``."""
