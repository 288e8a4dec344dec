-- tune_coalescing.lua — grain.tune (Nelder–Mead) over both coalescing knobs of an action.
--
-- Reads:   a metric counter that says how well parcels flow, each sample: by default
--          grain-coalescing's /app/coalescing/ns-per-parcel (the receiver's wall time per parcel
--          run, over its last 1024), the median of `window` samples per point
-- Changes: coalescing.<action>.parcels and .interval (narrowed to [1, max_parcels] and
--          [0, max_interval_us]); at the end the best point measured, kept for the rest of the run
-- Why:     the search APEX's tuning requests would run (Wagle 2019, §3, left the tuner unmerged):
--          it assumes nothing about coalescing — no model of gaps, fill times or bursts — and
--          pays for that with evaluations, each `skip + window` samples long, including the bad
--          points the simplex tries on its way, and with a single answer for the whole run.
--          docs/policies.md compares it with adaptive_coalescing.lua, which models the traffic.
-- Papers:  Wagle 2019 (coalescing parameters), APEX tuning requests.
--
-- Settings (M.defaults below), from a global TUNE_COALESCING table set by a policy loaded
-- before this one, or from require("tune_coalescing").start{ action = "work", ... }.

local M = {}

M.defaults = {
  action = "work",
  metric = "/app/coalescing/ns-per-parcel",
  goal = "min",
  max_parcels = 256,
  max_interval_us = 5000,
  window = 3,        -- samples per point (their median)
  skip = 1,          -- samples ignored after a change
  budget = 30,       -- evaluations
  strategy = "nelder_mead",
}

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  local p, i = "coalescing." .. cfg.action .. ".parcels", "coalescing." .. cfg.action .. ".interval"
  -- The search starts with the traffic: the first sample that has the metric (before it,
  -- grain.tune would end for want of it).
  local waiting
  waiting = grain.on("sample", function()
    if grain.counter(cfg.metric) == nil then return end
    grain.cancel(waiting)
    M.id = M.search(cfg, p, i)
  end, "tune_coalescing:wait")
  return waiting
end

function M.search(cfg, p, i)
  return grain.tune{
    knobs = { { name = p, min = 1, max = cfg.max_parcels },
              { name = i, min = 0, max = cfg.max_interval_us } },
    metric = cfg.metric, goal = cfg.goal, strategy = cfg.strategy, trigger = "sample",
    window = cfg.window, skip = cfg.skip, budget = cfg.budget,
    name = "tune_coalescing:" .. cfg.action,
    on_done = function(best, metric, converged)
      grain.log.info(string.format("tune_coalescing: %s after %d evaluations: parcels %d, " ..
                                   "interval %d us, %s = %g",
                                   converged and "converged" or "budget spent", best.evaluations,
                                   best[p], best[i], cfg.metric, metric))
    end,
  }
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(TUNE_COALESCING)
end
return M
