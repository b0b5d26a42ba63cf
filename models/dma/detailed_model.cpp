#include "models/dma/detailed_model.hpp"

#include <algorithm>

namespace trnsim::models {

DetailedMemoryModel::DetailedMemoryModel(const config::ArchConfig& arch, uint32_t cores,
                                         size_t max_transfers)
    : MemoryModel(arch, cores, max_transfers) {
  events_.reserve(4096);
  // Grown as needed up to the transfers in flight at once (ids are reused): only the count's
  // order of magnitude is reserved.
  parts_.reserve(std::min<size_t>(max_transfers, 4096) * arch.dma_engines);
  engines_.resize(static_cast<size_t>(cores_) * arch.dma_engines);
  for (size_t e = 0; e < engines_.size(); ++e) {
    engines_[e].core = static_cast<uint32_t>(e / arch.dma_engines);
    engines_[e].queues.resize(hw_queue(arch.dma_queues) + 1);
  }
  chunks_.resize(engines_.size() * std::max(1u, arch.dma_engine_outstanding_chunks));
  for (size_t c = 0; c < chunks_.size(); ++c) {
    chunks_[c].next_free = c + 1 < chunks_.size() ? static_cast<uint32_t>(c + 1) : kNone;
  }
  free_chunk_ = 0;
}

void DetailedMemoryModel::schedule(Picoseconds t, EventKind kind, uint32_t id) {
  events_.push(t, kind, id);
}

void DetailedMemoryModel::on_submit(uint32_t id, Picoseconds ready) {
  schedule(ready, EventKind::transfer_ready, id);
}

void DetailedMemoryModel::run_until(Picoseconds horizon) {
  while (events_.next_time() < horizon.value) {
    const auto e = events_.pop();
    ++events_processed_;
    const Picoseconds now(e.time);
    switch (e.kind) {
      case EventKind::transfer_ready:
        on_ready(e.id, now);
        break;
      case EventKind::engine_free:
        on_engine_free(e.id, now);
        break;
      case EventKind::hbm_decide:
        on_hbm_decide(e.id, now);
        break;
      case EventKind::chunk_done:
        on_chunk_done(e.id, now);
        break;
    }
  }
}

void DetailedMemoryModel::wake(uint32_t engine, Picoseconds now) {
  DmaEngine& eng = engines_[engine];
  if (eng.running) return;
  eng.running = true;
  schedule(now, EventKind::engine_free, engine);
}

void DetailedMemoryModel::on_ready(uint32_t id, Picoseconds now) {
  DmaTransfer& t = book_[id];
  const DmaPlan& plan = t.plan;
  const uint32_t queue = hw_queue(t.queue);
  for (uint32_t i = 0; i < plan.engines; ++i) {
    const uint32_t first = i * plan.partitions_per_engine;
    if (first >= plan.partitions) break;
    const uint32_t count = std::min(plan.partitions_per_engine, plan.partitions - first);
    EnginePart part;
    part.transfer = id;
    part.first_partition = first;
    part.next_descriptor = first * plan.runs_per_partition;
    part.end_descriptor = (first + count) * plan.runs_per_partition;
    const uint32_t pid = take_slot(parts_, free_parts_);
    parts_[pid] = part;
    const uint32_t engine =
        t.core * arch_.dma_engines + (plan.first_engine + i) % arch_.dma_engines;
    IndexList& q = engines_[engine].queues[queue];
    if (q.tail == kNone) {
      q.head = pid;
    } else {
      parts_[q.tail].next = pid;
    }
    q.tail = pid;
    ++t.parts_open;
    wake(engine, now);
  }
}

uint32_t DetailedMemoryModel::issue_hbm(uint32_t chunk, const DmaTransfer& t, uint64_t descriptor,
                                        uint64_t offset, uint64_t bytes, Picoseconds now) {
  const DmaPlan& plan = t.plan;
  const isa::Instruction& in = *t.instruction;
  auto need = [this](uint32_t channel, Picoseconds at) {
    schedule(at, EventKind::hbm_decide, channel);
  };
  uint32_t pieces = 0;
  for (int side = 0; side < 2; ++side) {
    const bool write = side == 1;
    if (write ? !plan.writes_hbm : !plan.reads_hbm) continue;
    const isa::AccessPattern& ap = write ? in.dst : in.src[0];
    // A transposing transfer reads its HBM block in descriptor order.
    const uint64_t address = plan.transpose ? ap.offset + descriptor * plan.run_bytes
                                            : run_address(ap, plan, descriptor);
    pieces += hbm_.enqueue(now, t.core, address + offset, bytes, write, chunk, need);
  }
  return pieces;
}

void DetailedMemoryModel::on_engine_free(uint32_t engine, Picoseconds now) {
  DmaEngine& eng = engines_[engine];
  eng.running = false;
  if (eng.outstanding >= std::max(1u, arch_.dma_engine_outstanding_chunks))
    return;  // chunk_done wakes it
  // Round-robin over the engine's queues that have work.
  const auto nq = static_cast<uint32_t>(eng.queues.size());
  uint32_t q = kNone;
  for (uint32_t k = 0; k < nq; ++k) {
    const uint32_t c = (eng.round_robin + k) % nq;
    if (eng.queues[c].head != kNone) {
      q = c;
      break;
    }
  }
  if (q == kNone) return;  // idle until a transfer becomes ready
  eng.round_robin = (q + 1) % nq;
  IndexList& queue = eng.queues[q];
  EnginePart& part = parts_[queue.head];
  DmaTransfer& t = book_[part.transfer];
  const DmaPlan& plan = t.plan;

  const uint32_t c = free_chunk_;
  Chunk& chunk = chunks_[c];
  free_chunk_ = chunk.next_free;
  chunk.transfer = part.transfer;
  chunk.engine = engine;
  chunk.pieces = 0;
  chunk.hbm_done = now;

  const uint64_t chunk_bytes = std::max(1u, arch_.dma_chunk_bytes);
  uint64_t bytes = 0;
  uint64_t descriptors_started = 0;
  if (plan.run_bytes >= chunk_bytes) {
    // A long run: a slice of one descriptor.
    bytes = std::min(chunk_bytes, plan.run_bytes - part.byte_in_run);
    if (part.byte_in_run == 0) descriptors_started = 1;
    chunk.pieces += issue_hbm(c, t, part.next_descriptor, part.byte_in_run, bytes, now);
    part.byte_in_run += bytes;
    if (part.byte_in_run == plan.run_bytes) {
      part.byte_in_run = 0;
      ++part.next_descriptor;
    }
  } else {
    // Short runs: as many whole descriptors as fit the chunk.
    const uint64_t k = std::min(std::max<uint64_t>(1, chunk_bytes / plan.run_bytes),
                                part.end_descriptor - part.next_descriptor);
    for (uint64_t d = 0; d < k; ++d) {
      chunk.pieces += issue_hbm(c, t, part.next_descriptor + d, 0, plan.run_bytes, now);
    }
    part.next_descriptor += k;
    descriptors_started = k;
    bytes = k * plan.run_bytes;
  }
  const Picoseconds engine_time =
      from_ns(arch_.dma_descriptor_overhead_ns * static_cast<double>(descriptors_started) +
              static_cast<double>(bytes) / plan.engine_bytes_per_ns);
  chunk.engine_end = now + engine_time;
  eng.busy = eng.busy + engine_time;
  ++eng.outstanding;
  ++t.chunks_open;
  if (t.start.value == kNever) t.start = now;
  if (part.next_descriptor == part.end_descriptor) {
    free_parts_.push_back(queue.head);
    queue.head = part.next;
    if (queue.head == kNone) queue.tail = kNone;
    --t.parts_open;
  }
  if (chunk.pieces == 0) schedule(chunk.engine_end, EventKind::chunk_done, c);
  eng.running = true;
  schedule(chunk.engine_end, EventKind::engine_free, engine);
}

void DetailedMemoryModel::on_hbm_decide(uint32_t channel, Picoseconds now) {
  const HbmServed s = hbm_.decide(channel, now);
  if (s.served) {
    Chunk& chunk = chunks_[s.tag];
    chunk.hbm_done = max(chunk.hbm_done, s.done);
    if (--chunk.pieces == 0) {
      schedule(max(chunk.engine_end, chunk.hbm_done), EventKind::chunk_done, s.tag);
    }
  }
  if (s.next_decision.value != kNever) schedule(s.next_decision, EventKind::hbm_decide, channel);
}

void DetailedMemoryModel::on_chunk_done(uint32_t c, Picoseconds now) {
  Chunk& chunk = chunks_[c];
  DmaTransfer& t = book_[chunk.transfer];
  DmaEngine& eng = engines_[chunk.engine];
  const uint32_t engine = chunk.engine;
  chunk.next_free = free_chunk_;
  free_chunk_ = c;
  if (eng.outstanding-- == std::max(1u, arch_.dma_engine_outstanding_chunks)) wake(engine, now);
  if (--t.chunks_open != 0 || t.parts_open != 0) return;
  book_.data_done(chunk.transfer, now);
}

}  // namespace trnsim::models
