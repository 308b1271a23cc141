/* Exclusive prefix sums of uint arrays on the device, so the MSM needs no host round trip.
 *
 * scan_blocks: each work-group scans SCAN_ITEMS * (work-group size) consecutive elements:
 * every item sums its SCAN_ITEMS elements, the group scans those sums in local memory
 * (Hillis-Steele: log2(size) steps of "add the value `offset` to the left"), then items
 * write their elements' exclusive prefixes and the group's total goes to block_sums.
 * The host scans block_sums the same way (one more level per factor of 4096) and
 * scan_add_blocks adds each block's offset back. */

#define SCAN_ITEMS 16

__kernel void scan_blocks(__global const uint *in, __global uint *out, const uint n,
                          __global uint *block_sums, __local uint *sums) {
    uint lid = get_local_id(0), size = get_local_size(0), grp = get_group_id(0);
    uint base = (grp * size + lid) * SCAN_ITEMS;
    uint vals[SCAN_ITEMS];
    uint total = 0;
    for (uint k = 0; k < SCAN_ITEMS; k++) {
        vals[k] = base + k < n ? in[base + k] : 0U;
        total += vals[k];
    }
    sums[lid] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint offset = 1; offset < size; offset <<= 1) {
        uint left = lid >= offset ? sums[lid - offset] : 0U;
        barrier(CLK_LOCAL_MEM_FENCE);
        sums[lid] += left;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint prefix = sums[lid] - total;
    for (uint k = 0; k < SCAN_ITEMS; k++) {
        if (base + k < n) out[base + k] = prefix;
        prefix += vals[k];
    }
    if (lid == size - 1) block_sums[grp] = sums[lid];
}

/* out[i] += block_offsets[i / per_block]. */
__kernel void scan_add_blocks(__global uint *out, const uint n, const uint per_block,
                              __global const uint *block_offsets) {
    uint i = get_global_id(0);
    if (i < n) out[i] += block_offsets[i / per_block];
}
