"""SnapDeals (EmptySectorUpdate, storage-proofs-update): parameters, the native update
(phi, rho, challenges, encoding) and the partition circuit."""
