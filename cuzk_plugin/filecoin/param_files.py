"""Filecoin's parameter files: which `.params` / `.vk` / `.meta` belong to which circuit, where
they are, and whether a file is the one Filecoin published.

Facts (shared/specs/params-files-facts.md): a circuit's files are
``v28-{cache_prefix}-{hex(SHA-256(identifier))}.{params,vk,meta}`` in the directory
``FIL_PROOFS_PARAMETER_CACHE`` (default ``/var/tmp/filecoin-proof-parameters``); every PoRep API
version of one sector size (V1, V1_1, SyntheticPoRep, NI-PoRep) shares one file; Filecoin's
manifest gives each file a digest, the first 32 hex characters of BLAKE2b-512 over the file.
Each file is hashed once (the verdict is cached by file identity, in memory and in the daemon's
state directory, ``[srs] state_dir``, so a read-only param cache is not hashed again on every
start); the file is read ahead on a thread while BLAKE2b runs (the digest is one sequential
stream, so the disk and the core work side by side), and the log says up front about how long it
will take, then its progress. ``TRUST_PARAMS=1`` skips hashing a .params that has its .vk beside
it, as Curio's fetcher does (never the empty-sector-update ones).

Engine circuit ids: ``porep-<size>``, ``wpost-<size>``, ``winning-<size>``, ``snap-<size>``
(and ``snap-poseidon-<size>``, a variant Filecoin publishes but does not use), size one of
``2k 8m 512m 32g 64g``.

    files = find_filecoin_params(filecoin_cache_dirs(param_cache), "porep-32g")
    if files is None: ...                       # expected_paths(...) names where it was looked for
    files.check_layout()                        # size arithmetic, cheap, verdict cached
    vk_bytes = files.pinned_vk_bytes()          # digests checked once (cached), the vk to pin
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.errors import ParamsError
from cuzk_plugin.filecoin.proofs import SECTOR_SIZE_NAMES

__all__ = [
    "PARAMS_VERSION", "FIL_CACHE_ENV", "FIL_DEFAULT_CACHE", "SIZE_IDS", "FilecoinCircuit", "ParamFiles",
    "FILECOIN_CIRCUITS", "filecoin_circuit", "circuit_for_seal_proof", "circuit_for_post_proof",
    "circuit_for_update_proof", "circuit_for_proof_name", "filecoin_cache_dirs", "find_filecoin_params", "expected_paths",
    "test_key_id", "test_key_path", "is_test_key_id", "params_digest", "vk_file_size", "VerdictCache",
    "PARAM_CHECKS_FILE", "remember_checks_in",
]

log = logging.getLogger(__name__)

PARAMS_VERSION = 28
FIL_CACHE_ENV = "FIL_PROOFS_PARAMETER_CACHE"
TRUST_PARAMS_ENV = "TRUST_PARAMS"
FIL_DEFAULT_CACHE = Path("/var/tmp/filecoin-proof-parameters")
#: sector size in bytes -> the size part of an engine circuit id
SIZE_IDS = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_SIZES = list(SIZE_IDS)
#: tree_r_last shape (base-sub-top arities) per sector size
_TREE = {2 << 10: "8-0-0", 8 << 20: "8-0-0", 512 << 20: "8-0-0", 32 << 30: "8-8-0", 64 << 30: "8-8-2"}
#: Window PoSt sectors per partition (filecoin-proofs WINDOW_POST_SECTOR_COUNT)
_WINDOW_SECTORS = {2 << 10: 2, 8 << 20: 2, 512 << 20: 2, 32 << 30: 2349, 64 << 30: 2300}
_TEST_SUFFIX = "-test-key"
#: The verdict store's name inside [srs] state_dir.
PARAM_CHECKS_FILE = "param-checks.json"
#: Blocks the digest reads at a time, and how many wait read ahead of the hashing.
DIGEST_BLOCK = 16 << 20
_READ_AHEAD = 4
#: Files from this size on are hashed with an up-front estimate and progress lines.
ANNOUNCE_BYTES = 256 << 20
_VK_HEAD = 864 + 4  # alpha..delta_g2 uncompressed, then the u32 ic count

#: Filecoin's manifest (parameters.json): file stem -> (.params digest, .vk digest)
KNOWN_DIGESTS: dict[str, tuple[str, str]] = {
    "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f": ("434fb1338ecfaf0f59256f30dde4968f", "dc1ade9929ade1708238f155343044ac"),
    "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb": ("09e612e4eeb7a0eb95679a88404f960c", "b687beb9adbd9dabe265a7e3620813e4"),
    "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472": ("6c77597eb91ab936c1cef4cf19eba1b3", "065179da19fbe515507267677f02823e"),
    "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820": ("6a388072a518cf46ebd661f5cc46900a", "0c7b4aac1c40fdb7eb82bc355b41addf"),
    "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-2-sha256_hasher-96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2": ("1801f8a6e1b00bceb00cc27314bb5ce3", "a89884252c04c298d0b3c81bfd884164"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e": ("82c88066be968bb550a05e30ff6c2413", "ffd79788d614d27919ae5bd2d94eacb6"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-50c7368dea9593ed0989e70974d28024efa9d156d585b7eea1be22b2e753f331": ("700171ecf7334e3199437c930676af82", "79ebb55f56fda427743e35053edad8fc"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-7d739b8cf60f1b0709eeebee7730e297683552e4b69cab6984ec0285663c5781": ("827359440349fe8f5a016e7598993b79", "bd2cd62f65c1ab84f19ca27e97b7c731"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56c18714a2c692b1b88d7e": ("d84f79a16fe40e9e25a36e2107bb1ba0", "fc02943678dd119e69e7fab8420e8819"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-b62098629d07946e9028127e70295ed996fe3ed25b0f9f88eb610a0ab4385a3c": ("2170a91ad5bae22ea61f2ea766630322", "6d3789148fb6466d07ee1e24d6292fd6"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0": ("7610b9f82bfc88405b7a832b651ce2f6", "0e0958009936b9d5e515ec97b8cb792d"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-5294475db5237a2e83c3e52fd6c2b03859a1831d45ed08c4f35dbf9a803165a9": ("c49499bb76a0762884896f9683403f55", "34d4feeacd9abf788d69ef1bb4d8fd00"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0cfb4f178bbb71cf2ecfcd42accce558b27199ab4fb59cb78f2483fe21ef36d9": ("1a7d4a9c8a502a497ed92a54366af33f", "4dae975de4f011f101f5a2f86d1daaba"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-0377ded656c6f524f1618760bffe4e0a1c51d5a70c4509eedae8a27555733edc": ("2cf49eb26f1fee94c85781a390ddb4c8", "0f8ec542485568fa3468c066e9fed82b"),
    "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-2627e4006b67f99cef990c0a47d5426cb7ab0a0ad58fc1061547bf2d28b09def": ("3810b7780ac0e299b22ae70f1f94c9bc", "59d2bf1857adc59a4f08fcf2afaa916b"),
    "v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194": ("311f92a3e75036ced01b1c0025f1fa0c", "eadad9784969890d30f2749708c79771"),
    "v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63": ("5aedd2cf3e5c0a15623d56a1b43110ad", "abd80269054d391a734febdac0d2e687"),
    "v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c": ("c3ad7bb549470b82ad52ed070aebb4f4", "994c5b7d450ca9da348c910689f2dc7f"),
    "v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18": ("1b3cfd761a961543f9eb273e435a06a2", "3a6941983754737fde880d29c7094905"),
    "v28-empty-sector-update-merkletree-poseidon_hasher-8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7": ("1a392e7b759fb18e036c7559b5ece816", "80e366df2f1011953c2d01c7b7c9ee8e"),
    "v28-empty-sector-update-poseidon-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18": ("b69983b5d7a97a20f43b3d5ff2a4ed04", "1ac05784f304129f74c5184190c1ec78"),
    "v28-empty-sector-update-poseidon-merkletree-poseidon_hasher-8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7": ("a6d4f96e2b641a6d7a1a8e6dc1155c8a", "8e8fb9e2c56eb5d740d0de135305a7b8"),
}


@dataclass(frozen=True)
class FilecoinCircuit:
    """One Filecoin circuit: its engine id, the identifier its file name hashes, its input count."""

    circuit_id: str
    kind: str  #: porep | wpost | winning | snap | snap-poseidon
    sector_size: int
    cache_prefix: str
    identifier: str
    #: public inputs including ONE (fixes the .vk size: 868 + 96 * n)
    public_inputs: int

    @property
    def stem(self) -> str:
        """The file name without extension: ``v28-{prefix}-{sha256(identifier)}``."""
        return f"v{PARAMS_VERSION}-{self.cache_prefix}-{hashlib.sha256(self.identifier.encode()).hexdigest()}"

    @property
    def digests(self) -> tuple[str, str] | None:
        """(.params digest, .vk digest) from Filecoin's manifest, or None where it has none."""
        return KNOWN_DIGESTS.get(self.stem)

    @property
    def size_name(self) -> str:
        return SECTOR_SIZE_NAMES[self.sector_size]


def _tree(size: int) -> str:
    return f"merkletree-poseidon_hasher-{_TREE[size]}"


def _porep(size: int) -> FilecoinCircuit:
    big = size >= 32 << 30
    layers, challenges = (11, 18) if big else (2, 2)
    identifier = (
        "layered_drgporep::PublicParams{ graph: stacked_graph::StackedGraph{expansion_degree: 8 "
        f"base_graph: drgraph::BucketGraph{{size: {size // 32}; degree: 6; hasher: poseidon_hasher}} }}, "
        f"challenges: LayerChallenges {{ layers: {layers}, max_count: {challenges} }}, tree: {_tree(size)} }}"
    )
    # inputs: ONE, replica_id, comm_d, comm_r, then per challenge: the node, 6 DRG and 8 expander
    # parents, and the node three more times (labeling, encoding, inclusion)
    inputs = 1 + 3 + challenges * (1 + 6 + 8 + 3)
    return FilecoinCircuit(f"porep-{SIZE_IDS[size]}", "porep", size,
                           f"stacked-proof-of-replication-{_tree(size)}-sha256_hasher", identifier, inputs)


def _post(size: int, winning: bool) -> FilecoinCircuit:
    # Winning is set up as 66 sectors of 1 challenge; Window as its sector count of 10 challenges
    challenges, sectors = (1, 66) if winning else (10, _WINDOW_SECTORS[size])
    identifier = f"FallbackPoSt::PublicParams{{sector_size: {size}, challenge_count: {challenges}, sector_count: {sectors}}}"
    kind = "winning" if winning else "wpost"
    return FilecoinCircuit(f"{kind}-{SIZE_IDS[size]}", kind, size, f"proof-of-spacetime-fallback-{_tree(size)}",
                           identifier, 1 + sectors * (1 + challenges))


def _update(size: int, poseidon: bool) -> FilecoinCircuit:
    kind = "snap-poseidon" if poseidon else "snap"
    prefix = f"empty-sector-update{'-poseidon' if poseidon else ''}-{_tree(size)}"
    identifier = f"empty_sector_update::PublicParams{{ sector_nodes: {size // 32} }}"
    return FilecoinCircuit(f"{kind}-{SIZE_IDS[size]}", kind, size, prefix, identifier, 5)


FILECOIN_CIRCUITS: dict[str, FilecoinCircuit] = {
    c.circuit_id: c
    for size in _SIZES
    for c in (_porep(size), _post(size, True), _post(size, False), _update(size, False), _update(size, True))
}


def filecoin_circuit(circuit_id: str) -> FilecoinCircuit | None:
    """The Filecoin circuit of an engine id (``porep-32g``), or None for any other id."""
    return FILECOIN_CIRCUITS.get(circuit_id)


def circuit_for_seal_proof(number: int) -> FilecoinCircuit:
    """RegisteredSealProof 0-19 (V1, V1_1, SyntheticPoRep, NI-PoRep): one circuit per size."""
    if not 0 <= number < 20:
        raise ValueError(f"registered seal proof {number} is not 0-19")
    return FILECOIN_CIRCUITS[f"porep-{SIZE_IDS[_SIZES[number % 5]]}"]


def circuit_for_post_proof(number: int) -> FilecoinCircuit:
    """Go RegisteredPoStProof: 0-4 Winning, 5-9 Window V1, 10-14 Window V1_1 (V1_2 in proofs-api)."""
    if not 0 <= number < 15:
        raise ValueError(f"registered PoSt proof {number} is not 0-14")
    kind = "winning" if number < 5 else "wpost"
    return FILECOIN_CIRCUITS[f"{kind}-{SIZE_IDS[_SIZES[number % 5]]}"]


def circuit_for_update_proof(number: int) -> FilecoinCircuit:
    """RegisteredUpdateProof 0-4 (the SHA-256 empty-sector-update circuit)."""
    if not 0 <= number < 5:
        raise ValueError(f"registered update proof {number} is not 0-4")
    return FILECOIN_CIRCUITS[f"snap-{SIZE_IDS[_SIZES[number]]}"]


_SIZE_BY_NAME = {name: size for size, name in SECTOR_SIZE_NAMES.items()}


def circuit_for_proof_name(family: str, name: str) -> FilecoinCircuit:
    """A registered proof's circuit by its name: ``family`` ``seal`` (Go or proofs-api names of
    V1, V1_1, SyntheticPoRep, NI-PoRep), ``post`` (StackedDrgWinning/Window<size>V1[_1|_2]) or
    ``update`` (StackedDrg<size>V1, RegisteredUpdateProof). Raises ValueError for an unknown name."""
    from cuzk_plugin.filecoin.proofs import SEAL_PROOFS

    if family == "seal":
        proof = next((p for p in SEAL_PROOFS if name in (p.name, p.go_name)), None)
        if proof is not None:
            return circuit_for_seal_proof(proof.number)
    elif family == "post":
        for kind, word in (("winning", "Winning"), ("wpost", "Window")):
            parts = name.removeprefix(f"StackedDrg{word}").rsplit("V1", 1)  # [size, version suffix]
            if name.startswith(f"StackedDrg{word}") and len(parts) == 2 and parts[1] in ("", "_1", "_2") \
                    and parts[0] in _SIZE_BY_NAME and not (kind == "winning" and parts[1]):
                return FILECOIN_CIRCUITS[f"{kind}-{SIZE_IDS[_SIZE_BY_NAME[parts[0]]]}"]
    elif family == "update":
        size = name.removeprefix("StackedDrg").removesuffix("V1")
        if name == f"StackedDrg{size}V1" and size in _SIZE_BY_NAME:
            return FILECOIN_CIRCUITS[f"snap-{SIZE_IDS[_SIZE_BY_NAME[size]]}"]
    else:
        raise ValueError(f"unknown proof family {family!r} (seal, post, update)")
    raise ValueError(f"{name!r} is not a registered {family} proof name")


# -- test keys ------------------------------------------------------------------------------------
def test_key_id(circuit_id: str) -> str:
    """The id of a key made here for a Filecoin circuit: never Filecoin's, named so everywhere."""
    return f"{circuit_id}{_TEST_SUFFIX}"


def is_test_key_id(circuit_id: str) -> str | None:
    """The Filecoin circuit id behind a test-key id, or None when ``circuit_id`` is not one."""
    base = circuit_id.removesuffix(_TEST_SUFFIX)
    return base if base != circuit_id and base in FILECOIN_CIRCUITS else None


def test_key_path(param_cache: Path, circuit_id: str) -> Path:
    """Where a test key for ``circuit_id`` lives: ``<param_cache>/<id>-test-key.params``."""
    return Path(param_cache) / f"{test_key_id(circuit_id)}.params"


# not pytest tests, whatever their names
test_key_id.__test__ = False  # type: ignore[attr-defined]
test_key_path.__test__ = False  # type: ignore[attr-defined]


# -- where the files are ----------------------------------------------------------------------------
def filecoin_cache_dirs(param_cache: Path | None = None) -> list[Path]:
    """Directories searched, in order: our ``[srs] param_cache``, then ``$FIL_PROOFS_PARAMETER_CACHE``
    (default /var/tmp/filecoin-proof-parameters). Duplicates removed."""
    dirs = [Path(os.path.expanduser(param_cache))] if param_cache is not None else []
    dirs.append(Path(os.path.expanduser(os.environ.get(FIL_CACHE_ENV) or FIL_DEFAULT_CACHE)))
    seen, out = set(), []
    for d in dirs:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def expected_paths(cache_dirs: list[Path], circuit_id: str) -> list[Path]:
    """Every path where ``circuit_id``'s .params file was looked for (for error messages)."""
    circuit = FILECOIN_CIRCUITS[circuit_id]
    return [d / f"{circuit.stem}.params" for d in cache_dirs]


def find_filecoin_params(cache_dirs: list[Path], circuit_id: str, *, verdict_store: Path | None = None) -> ParamFiles | None:
    """The files of a Filecoin circuit: the first directory holding its ``.params``; its ``.vk``
    from the same directory, else from the others. None when no directory holds the .params.
    Raises KeyError for an id that is not a Filecoin circuit (see :func:`filecoin_circuit`)."""
    circuit = FILECOIN_CIRCUITS[circuit_id]
    for d in cache_dirs:
        params = d / f"{circuit.stem}.params"
        if params.is_file():
            vk = next((c / f"{circuit.stem}.vk" for c in [d, *cache_dirs] if (c / f"{circuit.stem}.vk").is_file()),
                      d / f"{circuit.stem}.vk")
            return ParamFiles(circuit, params, vk, d / f"{circuit.stem}.meta", verdict_store)
    return None


# -- checks -------------------------------------------------------------------------------------------
def _hash_rate() -> float:
    """Bytes a second BLAKE2b takes on this core (32 MiB of zeros, ~30 ms): the up-front estimate."""
    buf = bytes(32 << 20)
    t0 = time.perf_counter()
    hashlib.blake2b(buf).digest()
    return len(buf) / max(time.perf_counter() - t0, 1e-6)


def _read_ahead(path: Path, block: int, blocks: queue.Queue) -> None:
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(block):
                blocks.put(chunk)
        blocks.put(None)
    except BaseException as exc:  # handed to the hashing thread, which raises it
        blocks.put(exc)


class LongReadLog:
    """The log of a long pass over a large key file (``what`` done to ``name``'s ``nbytes``):
    how far it is every ``every_s``, and its time at the end; silent below ANNOUNCE_BYTES."""

    def __init__(self, name: str, what: str, nbytes: int, every_s: float = 10.0):
        self.name, self.what, self.nbytes, self.every_s = name, what, nbytes, every_s
        self.loud = nbytes >= ANNOUNCE_BYTES
        self.t0 = time.perf_counter()
        self._next = self.t0 + every_s

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if self.loud and now >= self._next and done < self.nbytes:
            speed = done / (now - self.t0)
            log.info("%s: %.0f%% %s (%.1f of %.1f GB, %.2f GB/s, about %.0f s left)", self.name,
                     100 * done / self.nbytes, self.what, done / 1e9, self.nbytes / 1e9, speed / 1e9,
                     (self.nbytes - done) / max(speed, 1.0))
            self._next = now + self.every_s

    def finish(self) -> None:
        if self.loud:
            log.info("%s %s in %.1f s", self.name, self.what, time.perf_counter() - self.t0)


def params_digest(path: Path, *, block: int = DIGEST_BLOCK, progress_every_s: float = 10.0) -> str:
    """Filecoin's digest of a file: the first 32 hex characters of BLAKE2b-512 over all of it.

    A thread reads ahead while this one hashes (BLAKE2b releases the GIL on large blocks), so a
    44 GiB file costs max(read, hash), not their sum. Files of ANNOUNCE_BYTES and more are
    announced with an estimate and then logged every ``progress_every_s``."""
    path = Path(path)
    size = path.stat().st_size
    progress = LongReadLog(f"param files: {path.name}", "hashed", size, progress_every_s)
    if progress.loud:
        rate = _hash_rate()
        log.info("param files: hashing %s (%.1f GB) against Filecoin's digest: about %.0f s at %.1f GB/s on one core "
                 "(longer if the disk is slower); once, the verdict is kept", path.name, size / 1e9, size / rate, rate / 1e9)
    blocks: queue.Queue = queue.Queue(maxsize=_READ_AHEAD)
    threading.Thread(target=_read_ahead, args=(path, block, blocks), name="cuzk-digest-read", daemon=True).start()
    h = hashlib.blake2b()
    done = 0
    while (chunk := blocks.get()) is not None:
        if isinstance(chunk, BaseException):
            raise chunk
        h.update(chunk)
        done += len(chunk)
        progress.update(done)
    progress.finish()
    return h.hexdigest()[:32]


def vk_file_size(public_inputs: int) -> int:
    """A .vk file's size: 868 + 96 * (public inputs including ONE)."""
    return _VK_HEAD + 96 * public_inputs


def params_layout_size(path: Path) -> tuple[int, int]:
    """(ic count, size the counts imply) of a .params file, read from its five counts alone
    (a few seeks: no vector is read). The size: 888 + 96 * (ic + h + l + a + b_g1) + 192 * b_g2."""
    with open(path, "rb") as fh:
        head = fh.read(_VK_HEAD)
        if len(head) < _VK_HEAD:
            raise ParamsError(f"{path}: {len(head)} bytes, too short for a parameter file")
        (n_ic,) = struct.unpack_from(">I", head, 864)
        off = _VK_HEAD + 96 * n_ic
        for width in (96, 96, 96, 96, 192):  # h, l, a, b_g1, b_g2
            fh.seek(off)
            raw = fh.read(4)
            if len(raw) < 4:
                raise ParamsError(f"{path}: truncated at a vector count (offset {off})")
            off += 4 + width * struct.unpack(">I", raw)[0]
    return n_ic, off


class VerdictCache:
    """Verdicts of file checks keyed by the file's identity (device, inode, size, mtime), kept in
    memory and in a JSON file: the ``store`` a caller names, else this cache's own ``store`` (the
    daemon's ``[srs] state_dir``), so a restart does not hash 44 GiB again. A changed file has a
    new identity and is checked again."""

    def __init__(self, store: Path | None = None) -> None:
        self._memory: dict[str, str] = {}
        self._lock = threading.Lock()
        #: Where verdicts persist when a caller names no store (None: this process only).
        self.store = store

    @staticmethod
    def _key(path: Path, what: str) -> str:
        st = path.stat()
        return f"{what}:{os.path.realpath(path)}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"

    def get(self, path: Path, what: str, store: Path | None) -> str | None:
        store = store or self.store
        key = self._key(path, what)
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        if store is not None:
            value = _read_store(store).get(key)
            if isinstance(value, str):
                with self._lock:
                    self._memory[key] = value
                return value
        return None

    def put(self, path: Path, what: str, value: str, store: Path | None) -> None:
        store = store or self.store
        key = self._key(path, what)
        with self._lock:
            self._memory[key] = value
            if store is not None:
                data = _read_store(store)
                data[key] = value
                try:
                    store.parent.mkdir(parents=True, exist_ok=True)
                    tmp = store.with_name(f".{store.name}.{os.getpid()}.tmp")
                    tmp.write_text(json.dumps(data, indent=0, sort_keys=True))
                    os.replace(tmp, store)
                except OSError as exc:  # an unwritable state directory: the verdict stays in memory
                    log.warning("param files: cannot record a check in %s (%s); [srs] state_dir names a writable "
                                "directory", store, exc)


def _read_store(store: Path) -> dict:
    try:
        data = json.loads(store.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


#: One per process: each file is checked once while it stays the same file.
VERDICTS = VerdictCache()


def remember_checks_in(state_dir: Path) -> Path:
    """Keep this process's verdicts in ``state_dir`` (the daemon's [srs] state_dir); the file's path."""
    VERDICTS.store = Path(state_dir) / PARAM_CHECKS_FILE
    return VERDICTS.store


@dataclass(frozen=True)
class ParamFiles:
    """A Filecoin circuit's files as found on disk (``vk`` may not exist)."""

    circuit: FilecoinCircuit
    params: Path
    vk: Path
    meta: Path
    #: where check verdicts are remembered across restarts (None: this process only)
    verdict_store: Path | None = None

    def check_layout(self) -> None:
        """Size arithmetic, without reading the vectors: the counts add up to the file size, the
        ic count is the circuit's; the .vk (when present) has 868 + 96 * inputs bytes."""
        if self.vk.is_file():
            want = vk_file_size(self.circuit.public_inputs)
            if self.vk.stat().st_size != want:
                raise ParamsError(f"{self.vk}: {self.vk.stat().st_size:,} bytes, {self.circuit.circuit_id}'s "
                                  f"verifying key has {want:,} (868 + 96 x {self.circuit.public_inputs} inputs)")
        if VERDICTS.get(self.params, "layout", self.verdict_store) == "ok":
            return
        n_ic, implied = params_layout_size(self.params)
        size = self.params.stat().st_size
        if implied != size:
            raise ParamsError(f"{self.params}: the vector counts imply {implied:,} bytes, the file has {size:,} "
                              "(truncated or corrupted; fetch it again)")
        if n_ic != self.circuit.public_inputs:
            raise ParamsError(f"{self.params}: {n_ic} public inputs (ic), {self.circuit.circuit_id} has "
                              f"{self.circuit.public_inputs}: not this circuit's key")
        if self.meta.is_file():  # written by rust-fil-proofs' paramcache: {"sector_size": N}
            try:
                meta_size = json.loads(self.meta.read_text()).get("sector_size")
            except (ValueError, AttributeError):
                meta_size = None
            if meta_size != self.circuit.sector_size:
                raise ParamsError(f"{self.meta}: sector_size {meta_size!r}, {self.circuit.circuit_id} is "
                                  f"{self.circuit.sector_size} bytes")
        VERDICTS.put(self.params, "layout", "ok", self.verdict_store)

    def _check_digest(self, path: Path, want: str, *, compute: bool = True) -> None:
        got = VERDICTS.get(path, "blake2b", self.verdict_store)
        if got is None:
            if not compute:
                return
            got = params_digest(path)
            VERDICTS.put(path, "blake2b", got, self.verdict_store)
        if got != want:
            raise ParamsError(f"{path}: digest {got} is not Filecoin's {want} (corrupted, or another key under "
                              "Filecoin's name); fetch it again")

    def check_known_digests(self) -> None:
        """Refuse at once a file whose digest an earlier load already found wrong (no hashing here:
        a file not yet hashed is hashed at load, beside synthesis)."""
        if self.circuit.digests is not None:
            for path, want in zip((self.params, self.vk), self.circuit.digests, strict=True):
                if path.is_file():
                    self._check_digest(path, want, compute=False)

    def params_trusted(self) -> bool:
        """``TRUST_PARAMS=1`` (Curio's fetcher variable): skip hashing the .params, except the
        empty-sector-update ones, as Curio does. The .vk is still checked and pins the key."""
        return os.environ.get(TRUST_PARAMS_ENV) == "1" and not self.params.name.startswith("v28-empty-sector-update")

    def pinned_vk_bytes(self) -> bytes:
        """The verifying key to pin, checked: Filecoin's .vk, else the verifying key at the front
        of the .params; both files' digests checked against Filecoin's where it publishes them
        (once per file, verdict cached). Raises ParamsError when nothing can be trusted: no .vk
        and no published digest."""
        self.check_layout()
        digests = self.circuit.digests
        has_vk = self.vk.is_file()
        if digests is not None:
            if has_vk:
                self._check_digest(self.vk, digests[1])
            if not (has_vk and self.params_trusted()):
                self._check_digest(self.params, digests[0])
        if has_vk:
            return self.vk.read_bytes()
        if digests is None:
            raise ParamsError(f"{self.vk} is missing and Filecoin publishes no digest for {self.params.name}: "
                              "nothing to pin its verifying key to")
        with open(self.params, "rb") as fh:
            return fh.read(vk_file_size(self.circuit.public_inputs))
