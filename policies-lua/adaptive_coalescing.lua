-- adaptive_coalescing.lua — move an action's coalescing knobs with the traffic's phase.
--
-- Reads:   /coalescing{action#<action>/locality#R}/count/parcels     parcels sent (all dests)
--          /coalescing{action#<action>/locality#R}/count/messages    messages they went in
--          /threads{locality#R/total}/time/background-work, .../time/overall
--          (per period: the arrival gap Δt/Δparcels, the parcels per message Δp/Δm, and the
--           network overhead Δbackground/Δfunc, seed 001 Eq. 3.4)
-- Changes: coalescing.<action>.parcels, coalescing.<action>.interval
-- Why:     coalescing pays when parcels come densely (one message instead of many: less
--          network overhead) and hurts when they are sparse (a parcel waits for company that
--          does not come). The best (parcels, interval) follows the arrival rate, which
--          changes with the application's phase (seed 001 §3: any static setting is a
--          compromise). Each period the policy measures the gap between parcels: sparse
--          (gap ≥ sparse_us) sets the interval below the gap (Algorithm 1 then sends every
--          parcel at once: none waits) and keeps the parcel count ready for the next burst; dense
--          sets the interval to the latency budget and the parcels to what arrives within it
--          (budget / gap, a power of two), so that a message fills just as its timer would
--          fire. The budget grows while the network overhead stays above `high` and shrinks
--          below `low` (bigger messages only while the network still costs).
-- Seed:    001 (parcel coalescing, Algorithm 1, network overhead Eq. 3.4).
--
-- Configuration: globals set by a policy loaded before this one, or
--   require("adaptive_coalescing").start{ action = "work", budget_us = 200,
--       min_budget_us = 50, max_budget_us = 5000, sparse_us = 100, high = 0.2, low = 0.05 }

local M = {}

local function pow2_floor(x)
  local p = 1
  while p * 2 <= x do p = p * 2 end
  return p
end

function M.start(cfg)
  cfg = cfg or {}
  local action = cfg.action or "work"
  local budget = cfg.budget_us or 200
  local min_budget, max_budget = cfg.min_budget_us or 50, cfg.max_budget_us or 5000
  local sparse_us = cfg.sparse_us or 100
  local high, low = cfg.high or 0.2, cfg.low or 0.05

  local kp = grain.knob("coalescing." .. action .. ".parcels")
  local ki = grain.knob("coalescing." .. action .. ".interval")
  local c = "/coalescing{action#" .. action .. "/locality#" .. grain.locality .. "}/count/"
  local t = "/threads{locality#" .. grain.locality .. "/total}/time/"
  local last
  local dense_parcels = cfg.parcels or 64   -- kept through sparse phases

  -- Every counter snapshot (--grain:sample-interval, 10 ms by default): the period is the
  -- snapshots' own time, so the rates are those of the samples' values.
  return grain.on("sample", function(ev)
    local parcels, messages = grain.counter(c .. "parcels"), grain.counter(c .. "messages")
    local bg, func = grain.counter(t .. "background-work"), grain.counter(t .. "overall")
    if not parcels or not messages or not bg or not func then return end
    local now = ev.time
    local cur = { parcels = parcels, messages = messages, bg = bg, func = func, time = now }
    if last == nil or parcels < last.parcels then last = cur return end  -- first, or reset
    local dp, dm = parcels - last.parcels, messages - last.messages
    local dt_us = (now - last.time) * 1e6
    local dfunc = func - last.func
    local overhead = dfunc > 0 and (bg - last.bg) / dfunc or 0
    last = cur
    if dp == 0 then return end                          -- nothing sent: keep the settings
    local gap = dt_us / dp
    local ppm = dm > 0 and dp / dm or dp
    local why = string.format("gap %.2f us, %.1f parcels/message, network overhead %.3f",
                              gap, ppm, overhead)
    if gap >= sparse_us then
      -- Algorithm 1 sends a parcel that comes later than the interval at once, so an
      -- interval well below the gap costs sparse traffic nothing, and a dense burst that
      -- starts before the next sample is coalesced from its first parcels.
      kp:set(dense_parcels, "sparse: " .. why)
      ki:set(math.max(1, math.floor(math.min(gap / 4, min_budget))), "sparse: " .. why)
      return
    end
    if overhead > high then
      budget = math.min(max_budget, budget * 2)
    elseif overhead < low then
      budget = math.max(min_budget, budget / 2)
    end
    local want = math.max(2, math.min(4096, pow2_floor(budget / math.max(gap, 0.01))))
    dense_parcels = want
    ki:set(math.floor(budget), "dense: " .. why)
    kp:set(want, "dense: " .. why)
  end, "adaptive_coalescing:" .. action)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(ADAPTIVE_COALESCING)
end
return M
