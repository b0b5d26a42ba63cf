#include "models/hbm/hbm.hpp"

namespace trnsim::models {

namespace {
Picoseconds ns(double v) {
  return from_ns(v);
}
Picoseconds times(Picoseconds t, uint64_t n) {
  return Picoseconds(t.value * static_cast<int64_t>(n));
}
}  // namespace

HbmModel::HbmModel(const config::ArchConfig& arch, uint32_t stacks)
    : hbm_(arch.hbm),
      stacks_(stacks == 0 ? 1 : stacks),
      core_bytes_(arch.hbm_capacity_bytes),
      cores_per_stack_(arch.hbm.cores_per_stack == 0 ? 1 : arch.hbm.cores_per_stack),
      half_latency_(ns(arch.hbm_latency_ns / 2)),
      t_burst_(ns(arch.hbm.burst_ns())),
      t_rcd_(ns(hbm_.t_rcd)),
      t_rp_(ns(hbm_.t_rp)),
      t_ras_(ns(hbm_.t_ras)),
      t_cl_(ns(hbm_.t_cl)),
      t_cwl_(ns(hbm_.t_cwl)),
      t_wr_(ns(hbm_.t_wr)),
      t_rtp_(ns(hbm_.t_rtp)),
      t_ccd_l_(max(ns(hbm_.t_ccd_l), t_burst_)),
      t_rrd_(ns(hbm_.t_rrd)),
      t_faw_(ns(hbm_.t_faw)),
      t_wtr_(ns(hbm_.t_wtr)),
      t_rtw_(ns(hbm_.t_rtw)),
      t_refi_(ns(hbm_.t_refi)),
      t_rfc_(ns(hbm_.t_rfc)),
      peak_per_stack_(peak_bytes_per_ns(arch)) {
  if (t_refi_.value > 0) refi_reciprocal_ = UINT64_MAX / static_cast<uint64_t>(t_refi_.value);
  div_.interleave = Divisor(hbm_.interleave_bytes);
  div_.channels = Divisor(hbm_.pseudo_channels);
  while ((uint64_t{1} << channel_bits_) < hbm_.pseudo_channels) ++channel_bits_;
  channel_mask_ = (uint64_t{1} << channel_bits_) - 1;
  div_.units_per_row = Divisor(hbm_.row_bytes / hbm_.interleave_bytes);
  div_.bank_groups = Divisor(hbm_.bank_groups);
  div_.banks_per_group = Divisor(hbm_.banks_per_group);
  div_.burst = Divisor(hbm_.burst_bytes);
  refresh_offsets_.resize(hbm_.banks());
  for (uint32_t b = 0; b < hbm_.banks(); ++b) {
    refresh_offsets_[b] =
        hbm_.per_bank_refresh ? t_refi_.value * b / static_cast<int64_t>(hbm_.banks()) : 0;
  }
  channels_.resize(static_cast<size_t>(stacks_) * hbm_.pseudo_channels);
  for (size_t c = 0; c < channels_.size(); ++c) {
    Channel& ch = channels_[c];
    ch.banks.resize(hbm_.banks());
    ch.bank_group_free.resize(hbm_.bank_groups);
    ch.queue.reserve(256);
    for (auto& t : ch.last_acts) t = Picoseconds(-1000000000);
    ch.stack = static_cast<uint32_t>(c / hbm_.pseudo_channels);
    for (uint32_t b = 0; b < hbm_.banks(); ++b)
      ch.banks[b].period = refresh_offsets_[b] - t_refi_.value;
  }
}

HbmLocation HbmModel::locate(uint32_t core, uint64_t address) const {
  // Cores that share a stack have their address spaces side by side in it.
  const uint32_t stack = (core / cores_per_stack_) % stacks_;
  const uint64_t global = (core % cores_per_stack_) * core_bytes_ + address;
  // Interleave, lowest bits first: byte in unit | pseudo-channel | unit in row | bank group |
  // bank | row. Consecutive units spread over every pseudo-channel; the next round comes back
  // to the same row, so a stream keeps its rows open for row_bytes x pseudo-channels bytes.
  // The bank bits are XORed with the row's low bits (permutation-based interleaving, as memory
  // controllers do): streams a power of two apart, such as the partitions of one DMA transfer,
  // land in different banks instead of fighting over one row buffer.
  // (Shifts and masks when the sizes are powers of two, as the presets' are.)
  uint64_t u = div_.interleave.div(global);
  HbmLocation loc;
  loc.channel = stack * hbm_.pseudo_channels + channel_of_unit(u);
  u = div_.channels.div(u);
  u = div_.units_per_row.div(u);
  const uint64_t group_bits = div_.bank_groups.mod(u);
  u = div_.bank_groups.div(u);
  const uint64_t bank_bits = div_.banks_per_group.mod(u);
  loc.row = div_.banks_per_group.div(u);
  loc.bank_group = static_cast<uint32_t>(div_.bank_groups.mod(group_bits ^ loc.row));
  loc.bank =
      loc.bank_group * hbm_.banks_per_group +
      static_cast<uint32_t>(div_.banks_per_group.mod(bank_bits ^ div_.bank_groups.div(loc.row)));
  return loc;
}

// Bank b's refreshes start at offset_b + k * tREFI and last tRFC. Per-bank refresh staggers
// the banks evenly over tREFI; all-bank refresh refreshes every bank at offset 0.
int64_t HbmModel::refresh_offset(uint32_t bank) const {
  return refresh_offsets_[bank];
}

// floor(n / tREFI) for n >= 0, without a hardware division (plan() asks several times per piece
// and an idiv costs tens of cycles): the high half of n times floor((2^64 - 1) / tREFI) is at
// most one or two below the quotient, and the remainder puts it right.
int64_t HbmModel::refresh_periods(int64_t n) const {
  const auto un = static_cast<uint64_t>(n);
  auto q = static_cast<uint64_t>((static_cast<unsigned __int128>(un) * refi_reciprocal_) >> 64);
  uint64_t r = un - q * static_cast<uint64_t>(t_refi_.value);
  while (r >= static_cast<uint64_t>(t_refi_.value)) {
    ++q;
    r -= static_cast<uint64_t>(t_refi_.value);
  }
  return static_cast<int64_t>(q);
}

int64_t HbmModel::period_start(const Bank& b, uint32_t bank, int64_t t) const {
  if (t >= b.period && t - b.period < t_refi_.value) return b.period;
  const int64_t offset = refresh_offset(bank);
  const int64_t rel = t - offset;
  const int64_t k = rel < 0 ? -1 : refresh_periods(rel);
  b.period = offset + k * t_refi_.value;
  return b.period;
}

Picoseconds HbmModel::refresh_overlapping(const Bank& b, uint32_t bank, Picoseconds from,
                                          Picoseconds to) const {
  if (!refreshes()) return Picoseconds(kNever);
  const int64_t offset = refresh_offset(bank);
  int64_t start = period_start(b, bank, from.value);
  for (int i = 0; i < 2; ++i, start += t_refi_.value) {
    if (start < offset) continue;  // before the bank's first refresh
    if (start < to.value && start + t_rfc_.value > from.value) return Picoseconds(start);
  }
  return Picoseconds(kNever);
}

HbmModel::Plan HbmModel::plan(const Channel& ch, const Piece& p) const {
  const Bank& b = ch.banks[p.bank];
  Plan r;
  const Picoseconds s = p.arrival;
  bool open = b.open_row >= 0;
  if (open && b.next_refresh <= s) {
    open = false;  // a refresh precharged the bank since it was last used
    r.refreshed = true;
  }
  const Picoseconds access = times(t_burst_, p.bursts) + (p.write ? t_cwl_ : t_cl_);
  if (open && b.open_row == static_cast<int64_t>(p.row)) {
    const Picoseconds col = max(s, b.col_ready);
    if (refresh_overlapping(b, p.bank, col, col + access).value == kNever) {
      r.outcome = RowOutcome::hit;
      r.hit_planned = true;
      r.data_start = col + (p.write ? t_cwl_ : t_cl_);
    } else {
      open = false;  // a refresh closes the row first: open it again afterwards
      r.refreshed = true;
    }
  }
  if (!r.hit_planned) {
    Picoseconds act;
    if (open) {
      r.outcome = RowOutcome::conflict;
      r.pre = max(s, b.pre_ready);
      act = r.pre + t_rp_;
    } else {
      r.outcome = RowOutcome::miss;
      act = max(s, b.act_ready);
    }
    act = max(act, ch.last_act + t_rrd_);
    act = max(act, ch.last_acts[ch.act_ring] + t_faw_);  // the 4th most recent activate
    const Picoseconds ref = refresh_overlapping(b, p.bank, act, act + t_rcd_ + access);
    if (ref.value != kNever) {
      act = max(act, ref + t_rfc_);
      r.refreshed = true;
    }
    r.act = act;
    r.data_start = act + t_rcd_ + (p.write ? t_cwl_ : t_cl_);
  }
  Picoseconds bus = ch.bus_free;
  if (bus.value > 0 && ch.last_write != p.write) bus = bus + (p.write ? t_rtw_ : t_wtr_);
  const uint32_t bg = p.bank_group;
  r.data_start = max(r.data_start, max(bus, ch.bank_group_free[bg]));
  return r;
}

HbmServed HbmModel::decide(uint32_t channel, Picoseconds now) {
  Channel& ch = channels_[channel];
  HbmServed out;
  // FR-FCFS: of the pieces that have arrived, the one whose data can start first; on a tie a
  // row hit, then the oldest. The oldest is taken anyway once it has lost starvation_limit
  // decisions in a row.
  size_t best = SIZE_MAX;
  Plan best_plan;
  Picoseconds first_arrival(kNever);
  const size_t window = std::min<size_t>(ch.queue.size(), std::max(1u, hbm_.scheduler_window));
  for (size_t i = 0; i < window; ++i) {
    const Piece& p = ch.queue[i];
    if (p.arrival > now) {
      first_arrival = p.arrival < first_arrival ? p.arrival : first_arrival;
      continue;
    }
    if (best != SIZE_MAX) {
      // A piece's data cannot start before the data bus (after a turnaround) and its bank group
      // are free. A piece that cannot start earlier than the best so far, or only as early when
      // the best is a row hit, cannot win: skip planning it (the choice is the same).
      Picoseconds bound = ch.bus_free;
      if (bound.value > 0 && ch.last_write != p.write) bound = bound + (p.write ? t_rtw_ : t_wtr_);
      bound = max(bound, ch.bank_group_free[p.bank_group]);
      if (bound > best_plan.data_start ||
          (bound == best_plan.data_start && best_plan.outcome == RowOutcome::hit)) {
        continue;
      }
    }
    const Plan pl = plan(ch, p);
    const bool better = best == SIZE_MAX || pl.data_start < best_plan.data_start ||
                        (pl.data_start == best_plan.data_start && pl.outcome == RowOutcome::hit &&
                         best_plan.outcome != RowOutcome::hit);
    if (better) {
      best = i;
      best_plan = pl;
    }
    if (i == 0 && ch.bypassed >= hbm_.starvation_limit) break;  // the oldest, now
  }
  if (best == SIZE_MAX) {
    out.next_decision = first_arrival;  // nothing has arrived yet
    return out;
  }
  ch.bypassed = best == 0 ? 0 : ch.bypassed + 1;
  const Piece p = ch.queue[best];
  ch.queue.erase(best);

  Bank& b = ch.banks[p.bank];
  const Picoseconds data_end = best_plan.data_start + times(t_burst_, p.bursts);
  if (best_plan.act.value != kNever) {
    b.open_row = static_cast<int64_t>(p.row);
    b.col_ready = best_plan.act + t_rcd_;
    b.pre_ready = best_plan.act + t_ras_;
    ch.last_acts[ch.act_ring] = best_plan.act;
    ch.act_ring = (ch.act_ring + 1) % 4;
    ch.last_act = max(ch.last_act, best_plan.act);
  }
  // Write recovery before a precharge; a read needs tRTP after its last column command.
  b.pre_ready = max(b.pre_ready, p.write ? data_end + t_wr_ : data_end - t_cl_ + t_rtp_);
  b.last_use = data_end;
  if (refreshes()) {
    b.next_refresh = Picoseconds(period_start(b, p.bank, data_end.value) + t_refi_.value);
  }
  ch.bank_group_free[p.bank_group] = best_plan.data_start + times(t_ccd_l_, p.bursts);
  if (ch.bus_free.value > 0 && ch.last_write != p.write) ++counters_.turnarounds;
  ch.bus_free = data_end;
  ch.last_write = p.write;

  ++counters_.requests;
  counters_.column_accesses += p.bursts;
  const uint64_t bytes = static_cast<uint64_t>(p.bursts) * hbm_.burst_bytes;
  (p.write ? counters_.write_bytes : counters_.read_bytes) += bytes;
  counters_.bus_busy = counters_.bus_busy + times(t_burst_, p.bursts);
  if (best_plan.refreshed) ++counters_.refresh_stalls;
  switch (best_plan.outcome) {
    case RowOutcome::hit:
      counters_.row_hits += p.bursts;
      break;
    case RowOutcome::miss:
      ++counters_.row_misses;
      counters_.row_hits += p.bursts - 1u;
      break;
    case RowOutcome::conflict:
      ++counters_.row_conflicts;
      counters_.row_hits += p.bursts - 1u;
      break;
  }

  out.served = true;
  out.tag = p.tag;
  out.outcome = best_plan.outcome;
  out.done = data_end + half_latency_;
  if (ch.queue.empty()) {
    ch.scheduled = false;
  } else {
    // Decide the next piece while this one's data moves: one piece of lookahead.
    out.next_decision = max(now, best_plan.data_start);
  }
  return out;
}

}  // namespace trnsim::models
