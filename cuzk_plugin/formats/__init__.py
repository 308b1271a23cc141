"""Key, proof and partition formats: the data every layer above exchanges (bellperson `.params` /
`.vk` layout, 192-byte proofs, synthesized partitions, pre-compiled circuits)."""
