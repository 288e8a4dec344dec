-- tune_grain.lua — Nelder-Mead on the iteration time over the logarithm of a grain knob.
--
-- Reads:   the iteration time: a payload field of the iteration event ("duration_ns" of
--          grain-stencil) or a counter ("/app/iteration-time"), one value per step; the
--          event's `nx_field` (the grain the step ran with) to discard steps that straddle a
--          change.
-- Changes: the grain knob (`stencil.nx` by default); at the end, the best value measured.
-- Why:     like APEX's repartitioning example (an online search over the partition count of
--          a stencil), but on log(grain): the execution time vs. partition size of Grubel et
--          al. 2015 is a valley spanning decades, flat at the bottom, so a multiplicative step
--          means the same everywhere and a search over the linear range would spend its first
--          evaluations at half the range. grain.tune's strategies work on the linear range of
--          a knob, hence this 1-D Nelder-Mead (reflect 1, expand 2, contract 1/2, shrink 1/2)
--          in Lua, on u = log(grain). Each point is measured as the mean of `window` steps,
--          after the change has reached the application and `first` steps at the new grain.
--          The search ends when the simplex is narrower than `tolerance` (a factor), or after
--          `budget` evaluations; the best point is then applied and kept (decision reason
--          "tune_grain converged ..."), and the policy stops.
--
-- Compared with adaptive_grain.lua it needs no counters and assumes nothing about why a grain
-- is slow, but it pays for every probe with whole iterations at that grain, including the bad
-- ones Nelder-Mead tries on its way.
--
-- Settings (M.defaults below; docs/policies.md), from a global TUNE_GRAIN table set by a
-- policy loaded before this one, or from require("tune_grain").start{ knob = "stencil.nx",
-- metric = "duration_ns", ... }.

local M = {}

M.defaults = {
  knob = "stencil.nx",
  trigger = "iteration",      -- the event that ends a step
  metric = "duration_ns",     -- payload field, or a "/counter"
  nx_field = grain.optional("string", "nx"),  -- payload: the grain the step ran with (false:
                                              -- unknown)
  skip = 1,                   -- steps ignored after a change when nx_field is absent
  first = 2,                  -- steps at a new point ignored (they re-partition, touch new memory)
  window = 3,                 -- steps measured per point (their mean)
  initial_step = 8,           -- the simplex's second vertex: grain x initial_step
  tolerance = 1.25,           -- converged when the simplex spans less than this factor
  budget = 16,                -- evaluations at most
  min = grain.optional("number"),  -- narrower range than the knob's
  max = grain.optional("number"),
  name = "tune_grain",
  on_done = grain.optional("function"),  -- function(best_value, best_metric, converged)
}

-- The mean, not the median: the steps of a pipelined application end in bursts (two steps
-- 0.2 ms apart, then a long one), and the mean of consecutive step times is the elapsed time
-- per step.
local function mean(t)
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  return s / #t
end

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  if cfg.nx_field == false then cfg.nx_field = nil end
  assert(cfg.initial_step > 1 and cfg.tolerance > 1, "tune_grain: initial_step and tolerance > 1")
  assert(cfg.window >= 1 and cfg.budget >= 2, "tune_grain: window >= 1 and budget >= 2")

  local knob = grain.knob(cfg.knob)
  local info = knob:info()
  assert(info.type == "int" or info.type == "double",
         "tune_grain: knob " .. cfg.knob .. " is " .. info.type .. ", not a number")
  local lo = math.max(cfg.min or info.min, info.min, info.type == "int" and 1 or 1e-300)
  local hi = math.min(cfg.max or info.max, info.max)
  assert(lo < hi, "tune_grain: empty range")
  local ulo, uhi = math.log(lo), math.log(hi)
  local tol = math.log(cfg.tolerance)

  local st = {
    phase = "measuring",  -- measuring | done
    evaluations = 0,
    measured = {},        -- knob value -> metric
    best = nil, best_metric = nil,
    converged = false,
  }
  M.state = st

  local function value_of(u)
    u = math.max(ulo, math.min(uhi, u))
    local v = math.exp(u)
    if info.type == "int" then
      v = info.min + math.floor((v - info.min) / info.step + 0.5) * info.step
      v = math.max(info.min, math.min(info.max, v))
    end
    return v
  end

  -- The search as a coroutine: evaluate(u) yields until the point is measured.
  local pending, samples, skip, first = nil, {}, 0, 0
  local function evaluate(u, why)
    local v = value_of(u)
    if st.measured[v] then return st.measured[v] end
    if st.evaluations >= cfg.budget then error({ budget = true }) end
    pending, samples = v, {}
    if knob:get() ~= v then
      knob:set(v, string.format("tune_grain: %s (evaluation %d)", why, st.evaluations + 1))
      skip = cfg.nx_field and 0 or cfg.skip
      first = cfg.first
    end
    local f = coroutine.yield()
    st.evaluations = st.evaluations + 1
    st.measured[v] = f
    if not st.best_metric or f < st.best_metric then st.best, st.best_metric = v, f end
    return f
  end

  local function search()
    -- Vertices (u, f), sorted best first.
    local x0 = math.log(knob:get())
    local x1 = x0 + math.log(cfg.initial_step)
    if x1 > uhi then x1 = x0 - math.log(cfg.initial_step) end
    x1 = math.max(ulo, math.min(uhi, x1))
    local s = { { x0, evaluate(x0, "start") }, { x1, evaluate(x1, "initial simplex") } }
    while true do
      table.sort(s, function(a, b) return a[2] < b[2] end)
      local b, w = s[1], s[2]
      if math.abs(b[1] - w[1]) < tol or value_of(b[1]) == value_of(w[1]) then
        st.converged = true
        return
      end
      local c = b[1]                         -- centroid of all but the worst (1-D: the best)
      local xr = math.max(ulo, math.min(uhi, c + (c - w[1])))
      -- At the edge of the range the reflection is the best point itself: contract instead.
      local fr = value_of(xr) == value_of(c) and math.huge or evaluate(xr, "reflect")
      if fr < b[2] then
        local xe = math.max(ulo, math.min(uhi, c + 2 * (c - w[1])))
        local fe = evaluate(xe, "expand")
        if fe < fr then s[2] = { xe, fe } else s[2] = { xr, fr } end
      elseif fr < w[2] then
        s[2] = { xr, fr }                    -- 1-D: better than the worst, not the best
      else
        -- Inside contraction; in 1-D a failed contraction's shrink towards the best is the
        -- same point, so the simplex halves either way.
        local xc = c + 0.5 * (w[1] - c)
        s[2] = { xc, evaluate(xc, "contract") }
      end
    end
  end

  local co = coroutine.create(function()
    local ok, err = pcall(search)
    if not ok and not (type(err) == "table" and err.budget) then error(err, 0) end
  end)

  local function finish()
    st.phase = "done"
    local v = st.best
    if v then
      knob:set(v, string.format("tune_grain %s after %d evaluations: best %s = %g",
                                st.converged and "converged" or "budget spent",
                                st.evaluations, cfg.metric, st.best_metric))
    end
    grain.log.info(string.format("tune_grain: %s after %d evaluations: %s = %s, %s = %g",
                                 st.converged and "converged" or "budget spent", st.evaluations,
                                 cfg.knob, tostring(v), cfg.metric, st.best_metric or 0 / 0))
    if cfg.on_done then cfg.on_done(v, st.best_metric, st.converged) end
  end

  local function resume(...)
    local ok, err = coroutine.resume(co, ...)
    if not ok then error("tune_grain: " .. tostring(err), 0) end
    if coroutine.status(co) == "dead" and st.phase ~= "done" then finish() end
  end

  local id
  id = grain.on(cfg.trigger, function(ev)
    if st.phase == "done" then
      grain.cancel(id)
      return
    end
    if pending == nil then            -- first step: start the search at the current value
      resume()
      return
    end
    local ran = cfg.nx_field and ev[cfg.nx_field]
    if ran ~= nil and ran ~= pending then return end  -- the change has not arrived yet
    if ran == nil and skip > 0 then
      skip = skip - 1
      return
    end
    if first > 0 then
      first = first - 1
      return
    end
    local f
    if cfg.metric:sub(1, 1) == "/" then f = grain.counter(cfg.metric) else f = ev[cfg.metric] end
    if type(f) ~= "number" then return end
    samples[#samples + 1] = f
    if #samples >= cfg.window then resume(mean(samples)) end
  end, cfg.name)
  return id, st
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(TUNE_GRAIN)
end
return M
