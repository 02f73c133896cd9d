// RunError: the one mapping of an ONNX Runtime failure inside a Run() to an ebb::Error, shared
// by the generator's own Runs, the batched decode steps and the embedder, so that the same
// failure says the same thing (and has the same code) on every path: under arena.max_mem it
// names the cap and the fix (before, `ebb embed` said only "lower embed.batch_size").
// Thread-safety: a pure function.
#pragma once

#include <string>

#include "ebb/error.h"

namespace ebb::internal {

class ModelImpl;

// `ort_message`: ORT's exception text. `context`: what was running, e.g. "" or " (batched decode
// step of 3 generators)". `prefill_chunk`: the request's prefill_chunk_size, for the hint when
// the arena cap refused an extension (-1: not a prefill, no chunk hint).
// `smaller`: for an encoder, how to make the Run smaller ("lower embed.batch_size or
// embed.max_batch_tokens"), used instead of the prefill hint.
// Allocation failures are ResourceExhausted (with the arena.max_mem fix when a cap is set);
// anything else is Internal, naming the model file.
Error RunError(const ModelImpl& m, const std::string& ort_message, const std::string& context,
               int prefill_chunk, const std::string& smaller = "");

// Whether ORT's exception text says the process ran out of something (memory, address space,
// threads, file descriptors) rather than that the model or an option is wrong: std::bad_alloc,
// an allocator's refusal, or a system call's ENOMEM, EAGAIN, EMFILE or ENFILE text. Such a
// failure is the machine's state at that moment, so it must not condemn what was being loaded
// (a model-cache entry is kept, not rebuilt: model.cpp).
bool IsOutOfResources(const std::string& ort_message);

}  // namespace ebb::internal
