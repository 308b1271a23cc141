// Host -> device copies of partitions through pinned staging buffers on the context's
// upload stream, so that one partition's upload runs while the previous one computes, and the
// proving of partitions from host arrays built on them. upload_async, staging_free and
// upload_partition need ctx.upload_lock held by the caller (the staging buffers and the upload
// stream are shared).
#pragma once
#include <future>
#include <vector>

#include "prove.cuh"
#include "r1cs.cuh"

// Copies `bytes` of host memory to device memory on ctx.upload_stream, a chunk at a time: through
// the staging buffers (pageable memory; the device copies may still be running on return:
// record an event on upload_stream to wait for them) or directly (memory registered by
// cz_host_register). Returns once `src` has been read. `cancel` is checked before each chunk
// (CZ_CANCELLED).
void upload_async(cz_context& ctx, void* dst, const void* src, size_t bytes, const cz_cancel_flag* cancel = nullptr);

// Host -> device bytes a second from page-locked memory (the staging buffers) on
// ctx.upload_stream: the best of `samples` timed copies of 256 MiB (the buffers freed again if
// the measure made them). What a streamed key's copies are bound by: the residency plan states
// its floor at this figure.
double link_bytes_per_s(cz_context& ctx, int samples);

// Frees the staging buffers (context teardown; nothing may be uploading).
void staging_free(cz_context& ctx);

// One partition's host arrays (canonical Fr limbs, density flags), alive until it is proved:
// either a, b, c and the densities (a synthesized partition), or `circuit`, a circuit loaded
// for the device (resident, or its rows streamed) that gives a, b, c from the assignment and
// holds the densities (a witness partition; a, b, c and the density pointers are then null).
struct partition_host {
    const uint64_t *a = nullptr, *b = nullptr, *c = nullptr;
    size_t m = 0;  // rows of a, b, c
    const uint64_t* inputs = nullptr;
    size_t n_inputs = 0;
    const uint64_t* aux = nullptr;
    size_t n_aux = 0;
    const uint8_t *a_aux_density = nullptr, *b_input_density = nullptr, *b_aux_density = nullptr;
    const cz_circuit* circuit = nullptr;
};

// Allocates the partition's buffers (freed in upload_stream order too) and queues its upload on
// ctx.upload_stream: a, b, c zero padded to the next power of two (only allocated for a witness
// partition: r1cs_evaluate fills them), inputs and aux into one z buffer.
void upload_partition(cz_context& ctx, const partition_host& host, partition_buffers& out,
                      const cz_cancel_flag* cancel = nullptr);

// Proves a partition from host arrays on a library thread (cz_prove_start): uploads it through
// the staging buffers, then runs prove_device under ctx.compute_lock. Partitions started back
// to back upload while the one before them computes; `t` gets the stage times. Setting
// `*cancel` (alive until the future is ready) stops it at the next check, waiting for a lock,
// uploading or computing: the future then holds CZ_CANCELLED, and the partition's buffers are
// freed after the device work already queued.
std::future<proof_sums> start_proof(cz_context* ctx, const cz_srs* srs, const partition_host& host,
                                    prove_timings* t, const cz_cancel_flag* cancel = nullptr);
