-- adaptive_coalescing.lua — move an action's coalescing knobs with the traffic's phase.
--
-- Reads:   the coalescer's own event "coalescing.<action>", raised every `every` parcels of
--          the action (at most one per ms; the policy sets coalescing.event-parcels): running
--          totals of parcels, messages, arrival gaps (Σgap, Σlog2 gap, per destination),
--          message bytes and timer flushes. Between two events: the typical gap (geometric
--          mean), parcels per message, the share of messages the flush timer sent, bytes per
--          parcel.
-- Changes: coalescing.<action>.parcels, coalescing.<action>.interval (only when they move)
-- Why:     coalescing pays when parcels come densely (one message instead of many) and costs
--          when a parcel waits for company that does not come (Wagle 2019, §3: any static
--          setting is a compromise between phases). The model:
--          * a message of n parcels fills in n·g, g the gap between parcels *within* a burst:
--            the interval is fill·n·g, just long enough for a message to fill; the geometric
--            mean of the gaps is that g (the pauses between bursts barely move it, where they
--            dominate the arithmetic mean), and Algorithm 1 sends the first parcel after a
--            pause at once anyway;
--          * n is as large as the message may be: at most `max_parcels`, at most
--            `message_bytes` (0: no limit; e.g. an MPI eager limit, above which a message
--            waits until the receiver takes part), and at most what fills within
--            `budget_us`; messages that fill let n grow to that cap;
--          * messages that mostly leave by the timer with fewer than n parcels show bursts of
--            that size (request/answer rounds): n drops to it, so a burst leaves as soon as it
--            is complete, and n tries to grow again only after a back-off that doubles while
--            the traffic keeps that shape;
--          * a typical gap of `sparse_us` or more is a trickle: the interval drops below the
--            gap (every parcel goes at once: none waits) and n is kept for the next burst,
--            which is coalesced from its first parcels.
--          Sampling on the coalescer's events, not on a wall-clock period: a dense burst of
--          100,000 parcels lasts a few milliseconds, so a 10 ms (even 2 ms) sample sees it
--          when it is over; an event every 64 parcels sees it after 64.
-- Paper:   Wagle 2019 (parcel coalescing, Algorithm 1, the arrival-time counters).
--
-- Settings (M.defaults below; docs/policies.md), from a global ADAPTIVE_COALESCING table set
-- by a policy loaded before this one, or from require("adaptive_coalescing").start{ action =
-- "work", ... }.

local M = {}

M.defaults = {
  action = "work",          -- the coalesced action (its short name, as in the knobs)
  every = 64,               -- parcels between two events (coalescing.event-parcels)
  max_parcels = 256,        -- parcels per message at most
  message_bytes = 0,        -- bytes per message at most (0: no limit)
  budget_us = 2000,         -- a message fills within this, or is smaller
  fill = 2,                 -- interval = fill x parcels x typical gap
  max_interval_us = 5000,
  sparse_us = 100,          -- typical gap from which parcels go alone
  timer_share = 0.3,        -- messages sent by the timer from which bursts are "small"
  burst = 0.25,             -- ... if they also carry less than this share of n
  max_backoff = 64,         -- events between two tries to grow n, at most
  hysteresis = 0.25,        -- the interval moves only by more than this share
}

local function pow2_floor(x)
  local p = 1
  while p * 2 <= x do p = p * 2 end
  return p
end

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  assert(cfg.every >= 1 and cfg.max_parcels >= 1 and cfg.fill > 0 and cfg.sparse_us > 0,
         "adaptive_coalescing: every, max_parcels, fill and sparse_us must be positive")
  local action = cfg.action
  local kp = grain.knob("coalescing." .. action .. ".parcels")
  local ki = grain.knob("coalescing." .. action .. ".interval")
  grain.knob("coalescing.event-parcels"):set(cfg.every, "adaptive_coalescing samples on it")

  local st = { n = kp:get(), backoff = 1, hold = 0, ref_gap = nil, events = 0 }
  M.state = st
  -- The first event's totals are those since the start: it can act on them (the first burst
  -- of a run is the one a late answer costs most).
  local last = { parcels = 0, messages = 0, gaps = 0, gap_ns = 0, log2_gaps = 0, bytes = 0,
                 timer_flushes = 0 }

  local function set(k, v, why)
    if k:get() ~= v then k:set(v, why) end
  end
  -- The gap estimate jitters by ±10% from one event to the next: an interval that moves
  -- with it would be a decision record every ms, and buy nothing.
  local function set_interval(v, why)
    local cur = ki:get()
    if cur == 0 or v < cur * (1 - cfg.hysteresis) or v > cur * (1 + cfg.hysteresis) then
      set(ki, v, why)
    end
  end

  return grain.on("coalescing." .. action, function(ev)
    local cur = ev
    if ev.parcels < last.parcels then last = cur return end  -- another coalescer
    local dp, dm = ev.parcels - last.parcels, ev.messages - last.messages
    local dg = ev.gaps - last.gaps
    if dp <= 0 or dm <= 0 or dg <= 0 then last = cur return end
    st.events = st.events + 1
    local typ = 2 ^ ((ev.log2_gaps - last.log2_gaps) / dg - 0.5) / 1000   -- µs
    local mean = (ev.gap_ns - last.gap_ns) / dg / 1000
    local ppm = dp / dm
    local by_timer = (ev.timer_flushes - last.timer_flushes) / dm
    local bpp = (ev.bytes - last.bytes) / dp
    last = cur
    local why = string.format(
      "gap %.2f us typical (%.2f mean), %.1f parcels/message, %.0f%% by the timer", typ, mean,
      ppm, 100 * by_timer)

    if typ >= cfg.sparse_us then
      -- A trickle: below the gap no parcel waits; n stays ready for the next burst.
      set(ki, math.max(1, math.floor(math.min(typ / 4, cfg.sparse_us / 2))), "sparse: " .. why)
      return
    end
    -- A new kind of traffic (the typical gap moved 4x): forget the burst size learnt.
    if st.ref_gap == nil or typ > 4 * st.ref_gap or typ < st.ref_gap / 4 then
      st.backoff, st.hold = 1, 0
    end
    st.ref_gap = typ
    local cap = cfg.max_parcels
    if cfg.message_bytes > 0 and bpp > 0 then cap = math.min(cap, cfg.message_bytes / bpp) end
    cap = math.max(1, pow2_floor(math.min(cap, cfg.budget_us / math.max(typ, 1e-3))))
    local n = math.min(kp:get(), cap)
    if ki:get() > 0 and by_timer >= cfg.timer_share and ppm < cfg.burst * n then
      -- Bursts far smaller than a message (not a sender preempted for a while, which leaves
      -- messages by the timer that are merely short): wait for no more than a burst.
      n = math.max(1, math.floor(ppm + 0.5))
      st.hold, st.backoff = st.backoff, math.min(cfg.max_backoff, st.backoff * 2)
    elseif st.hold > 0 then
      st.hold = st.hold - 1
    elseif n < cap and (ppm >= 0.75 * n or ki:get() == 0) then
      -- Messages fill: bigger ones; straight to the cap unless bursts were seen.
      n = st.backoff == 1 and cap or math.min(cap, n * 2)
    end
    st.n = n
    local interval = math.max(1, math.min(cfg.max_interval_us, math.ceil(cfg.fill * n * typ)))
    set(kp, n, "dense: " .. why)
    set_interval(interval, "dense: " .. why)
  end, "adaptive_coalescing:" .. action)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(ADAPTIVE_COALESCING)
end
return M
