"""Host-side BLS12-381: field constants, limb arrays, point encodings with full validation."""

from cuzk_plugin.bls12_381.fields import (
    FQ_LIMBS,
    FR_LIMBS,
    P,
    R,
    ints_to_limbs,
    limbs_to_ints,
)

__all__ = ["P", "R", "FR_LIMBS", "FQ_LIMBS", "ints_to_limbs", "limbs_to_ints"]
