#include "models/dma/transfer_book.hpp"

#include <algorithm>
#include <cassert>

namespace trnsim::models {

TransferBook::TransferBook(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers)
    // The program's queues and the collectives' (MemoryModel::collective_queue).
    : queues_(arch.dma_queues + 1) {
  // Ids are reused, so the table holds the most transfers in flight at once, which a run that
  // issues its DMAs far ahead brings near max_transfers: reserved whole, the table is never
  // copied as it grows. Capacity never written costs address space only (a table this large
  // is its own mapping).
  transfers_.reserve(max_transfers);
  completions_.reserve(std::min<size_t>(max_transfers, 4096));
  queue_order_.resize(static_cast<size_t>(std::max(cores, 1u)) * queues_);
}

uint32_t TransferBook::add(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                           uint32_t index, Picoseconds issued) {
  const uint32_t id = take_slot(transfers_, free_transfers_);
  ++submitted_;
  DmaTransfer t;
  t.instruction = &dma;
  t.plan = plan;
  t.core = core;
  t.queue = dma.dma_queue;
  t.index = index;
  t.issued = issued;
  transfers_[id] = t;
  IndexList& q = order(core, dma.dma_queue);
  // earliest_issued() takes a queue's oldest transfer as its earliest triggered.
  assert(q.tail == kNone || transfers_[q.tail].issued <= issued);
  if (q.tail == kNone) {
    q.head = id;
  } else {
    transfers_[q.tail].next_in_queue = id;
  }
  q.tail = id;
  return id;
}

void TransferBook::data_done(uint32_t id, Picoseconds now) {
  DmaTransfer& t = transfers_[id];
  t.data_done = true;
  // In-order completion: release this queue's finished transfers from the head.
  IndexList& q = order(t.core, t.queue);
  while (q.head != kNone && transfers_[q.head].data_done) {
    DmaTransfer& done = transfers_[q.head];
    done.completed = true;
    done.end = now;
    completions_.push_back(q.head);
    ++completed_;
    q.head = done.next_in_queue;
  }
  if (q.head == kNone) q.tail = kNone;
}

Picoseconds TransferBook::earliest_issued() const {
  int64_t t = kNever;
  for (const IndexList& q : queue_order_) {
    if (q.head != kNone) t = std::min(t, transfers_[q.head].issued.value);
  }
  for (const uint32_t id : completions_) t = std::min(t, transfers_[id].issued.value);
  return Picoseconds(t);
}

void TransferBook::consume_completions(size_t delivered) {
  assert(delivered <= completions_.size());
  const auto end = completions_.begin() + static_cast<std::ptrdiff_t>(delivered);
  free_transfers_.insert(free_transfers_.end(), completions_.begin(), end);
  completions_.erase(completions_.begin(), end);
}

}  // namespace trnsim::models
