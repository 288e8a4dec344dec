-- tune_knob.lua — tune any knob against any metric with a chosen search strategy.
--
-- Reads:   the metric: a counter ("/app/iteration-time", "/threads/time/average", ...) read
--          from each sample, or a payload field of an application event ("duration_ns" of
--          grain::event("iteration", {{"duration_ns", dt}})), aggregated over `window`
--          triggers (median by default)
-- Changes: the knobs listed (each within its own range, or a narrower one given here); the
--          best point found is applied when the search ends, and a "tuned" event reports it
-- Why:     the best grain size, chunk size or coalescing parameters depend on the machine and
--          the input (Grubel et al. 2015: execution time vs. partition size has a wide, flat
--          valley whose position moves with the core count; Wagle 2019: parcels per message
--          and the flush interval have a machine-dependent optimum). Instead of a static sweep over
--          runs (--grain:knob=...), the search runs online, like an APEX tuning request.
-- Papers:  Grubel et al. 2015 (task size sweep), Wagle 2019 (coalescing parameters).
--
-- Settings (M.defaults below), from a global TUNE_KNOB table set by a policy loaded before
-- this one,
--   TUNE_KNOB = { knob = "stencil.nx", metric = "duration_ns", trigger = "iteration",
--                 goal = "min", strategy = "nelder_mead", window = 3, budget = 30 }
--   --grain:policy=my_tuning.lua --grain:policy=policies-lua/tune_knob.lua
-- or from a policy:  require("tune_knob").start{ knob = "loop.lambda", metric = "/app/time" }
-- `knob` may be a list ({ "a", "b" }) or entries with a narrower range
-- ({ name = "stencil.nx", min = 100, max = 100000, step = 100 }). The other settings are
-- grain.tune's (docs/lua-api.md); those left out take grain.tune's defaults.

local M = {}

M.defaults = {
  knob = grain.optional("string|table"),  -- the knob(s) to tune (required: knob or knobs)
  knobs = grain.optional("table"),        -- the same, as grain.tune names it
  metric = grain.optional("string"),      -- "/counter" or a payload field (required)
  goal = "min",
  strategy = "nelder_mead",
  trigger = grain.optional("string|number", "sample"),  -- event name, or a period in ms
  name = "tune_knob",
  window = grain.optional("number"),
  skip = grain.optional("number"),
  budget = grain.optional("number"),
  aggregate = grain.optional("string"),
  seed = grain.optional("number"),
  levels = grain.optional("number"),
  on_done = grain.optional("function"),   -- also called with grain.tune's on_done arguments
}

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  assert(cfg.knob or cfg.knobs, "tune_knob: no knob given (knob = \"name\"): set TUNE_KNOB = " ..
         "{ knob = ..., metric = ... } in a policy loaded first, or call start{...}")
  assert(cfg.metric, "tune_knob: no metric given (metric = \"/counter\" or payload field)")
  local knobs = cfg.knobs or cfg.knob
  if type(knobs) ~= "table" or knobs.name then knobs = { knobs } end
  local request = {}
  for k, v in pairs(cfg) do
    if v ~= false then request[k] = v end   -- false: grain.tune's default
  end
  request.knob = nil
  request.knobs = knobs
  request.on_done = function(best, metric, converged)
    local parts = {}
    for name, value in pairs(best) do
      -- Knob names have dots; the other fields are metric, evaluations, converged, id.
      if name:find("%.") then parts[#parts + 1] = name .. "=" .. tostring(value) end
    end
    table.sort(parts)
    grain.log.info(string.format("tune_knob: %s after %d evaluations: %s, %s = %g",
                                 converged and "converged" or "budget spent", best.evaluations,
                                 table.concat(parts, ", "), cfg.metric, metric))
    if cfg.on_done then cfg.on_done(best, metric, converged) end
  end
  return grain.tune(request)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(TUNE_KNOB)
end
return M
