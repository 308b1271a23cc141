"""Curio's requests, one package a proof kind: ``porep`` (the C1 envelope and output, PoRep
jobs), ``post`` (WindowPoSt and WinningPoSt vanilla proofs) and ``snap`` (SnapDeals
PartitionProofs), each with its decoders, its jobs and its engine provider; below them what
every kind shares: ``bincode`` and ``json_pieces`` (readers of Curio's bytes) and ``keys``
(Filecoin's parameter files or test keys, pre-compiled circuits).
"""
